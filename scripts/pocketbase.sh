#!/usr/bin/env bash
# Builds PocketBase's examples/base from source, as a baseline for the load tool
# (go run ./cmd/loadtest -server bin/logbook -pocketbase bin/pocketbase).
# The repo keeps this script, not PocketBase's code: the source comes through the
# Go module proxy at a pinned version and only the binary is left behind, in bin/
# by default, which git ignores.
#
#   bash scripts/pocketbase.sh [OUT]        OUT defaults to bin/pocketbase
#
# The version first tried is the one of the side-by-side run the issue cites; a
# proxy that does not serve it gets the newer fallback (which needs Go 1.27 or
# later to build), and the script says which it built. POCKETBASE_VERSION=vX.Y.Z
# builds that version alone. A binary already at OUT built from one of the
# versions asked for is kept (rm it to rebuild); a failed build leaves OUT as it
# was.
set -euo pipefail

out=${1:-bin/pocketbase}
module=github.com/pocketbase/pocketbase
versions=${POCKETBASE_VERSION:-v0.39.11 v0.40.4}

# The version a binary was built from: `go install pkg@version` records it as
# the main module's version in the build info.
built_version() {
	go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }'
}

if [ -f "$out" ]; then
	have=$(built_version "$out" || true)
	for v in $versions; do
		if [ "$have" = "$v" ]; then
			echo "pocketbase: $out is already PocketBase $v (examples/base, built from source); nothing to do"
			exit 0
		fi
	done
fi

command -v go >/dev/null || { echo "pocketbase: go is not on PATH" >&2; exit 1; }
if [ "$(go env GOPROXY)" = off ]; then
	echo "pocketbase: GOPROXY=off: the source comes through the Go module proxy" >&2
	exit 1
fi

# Outside any module, so that this repo's go.mod plays no part, and with a bin
# of its own, so that a failed build leaves nothing half-written at OUT.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export CGO_ENABLED=0

# Each version is tried once, in order. Its lookup is small and fast: it tells
# an unreachable proxy (a time-out) from a version the proxy does not serve (an
# answer) before a build that would take minutes to fail. The build itself can
# still fail on a module the proxy does not serve (a dependency, the source zip);
# the next version is then tried.
first=${versions%% *}
chosen=""
for v in $versions; do
	status=0
	msg=$(timeout 120 go list -m "$module@$v" 2>&1) || status=$?
	if [ "$status" = 124 ]; then
		echo "pocketbase: the Go module proxy ($(go env GOPROXY)) did not answer within 120s" >&2
		exit 1
	fi
	if [ "$status" != 0 ]; then
		echo "pocketbase: $module@$v is not served here: $msg" >&2
		continue
	fi
	echo "pocketbase: building $module/examples/base@$v from source (CGO_ENABLED=0; a few minutes the first time)"
	if GOBIN="$work/bin" go install -trimpath "$module/examples/base@$v"; then
		chosen=$v
		break
	fi
	echo "pocketbase: the build of $module/examples/base@$v failed (see above)" >&2
done
if [ -z "$chosen" ]; then
	echo "pocketbase: could not build any of: $versions (Go module proxy: $(go env GOPROXY))" >&2
	exit 1
fi
if [ "$chosen" != "$first" ]; then
	echo "pocketbase: fell back from $first to $chosen"
fi

cd - >/dev/null
mkdir -p "$(dirname "$out")"
mv "$work/bin/base" "$out"
echo "pocketbase: built PocketBase $(built_version "$out") at $out"
