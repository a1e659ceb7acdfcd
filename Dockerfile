# syntax=docker/dockerfile:1
FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
# The Go client is a module of its own that go.mod replaces with ./client.
COPY client/go.mod client/go.sum ./client/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/server ./cmd/server

FROM alpine:3.22
RUN adduser -D -u 10001 logbook && mkdir /data && chown logbook /data
COPY --from=build /out/server /usr/local/bin/server
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
ENTRYPOINT ["/usr/local/bin/server"]
