# syntax=docker/dockerfile:1
FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
# The Go client is a module of its own that go.mod replaces with ./client.
COPY client/go.mod client/go.sum ./client/
RUN go mod download
COPY . .
# The binary is logbook; cmd/server is its source folder. .git stays out of the
# image's context, so the version `logbook version` and /healthz report comes in
# as an argument: docker build --build-arg VERSION=$(git describe --tags --always) .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/logbook ./cmd/server

FROM alpine:3.22
RUN adduser -D -u 10001 logbook && mkdir /data && chown logbook /data
COPY --from=build /out/logbook /usr/local/bin/logbook
USER logbook
# Inside a container the server must listen on every interface to be reachable.
ENV LOGBOOK_ADDR=0.0.0.0:8080 \
    LOGBOOK_DB=/data/logbook.db
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD wget -qO- http://127.0.0.1:8080/readyz >/dev/null || exit 1
# SIGTERM drains the writer and checkpoints the WAL before exit.
STOPSIGNAL SIGTERM
# Arguments after the image name are logbook's: `docker run IMAGE keys create …`.
ENTRYPOINT ["/usr/local/bin/logbook"]
