#!/usr/bin/env bash
# Installs the pgvector extension into this machine's PostgreSQL when it is
# missing, so that the PostgreSQL tests exercise Logbook's pgvector search.
#
# Debian 12 has no pgvector package and CI reaches only Debian, the Go module
# proxy and npm. The proxy serves any public Git repository as a module zip,
# checked against sum.golang.org, so pgvector's tagged source comes from there;
# the server headers come from Debian's postgresql-server-dev package of the
# installed server version, unpacked (not installed: that would pull in
# clang and LLVM for JIT bitcode Logbook does not need). Needs root (or sudo)
# to write into PostgreSQL's lib and extension directories.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PGVECTOR_VERSION=${PGVECTOR_VERSION:-v0.8.1}
GO=${GO:-go}

pg_config="$PG_BIN/pg_config"
sharedir=$("$pg_config" --sharedir)
pkglibdir=$("$pg_config" --pkglibdir)
if [ -f "$sharedir/extension/vector.control" ] && [ -f "$pkglibdir/vector.so" ]; then
	exit 0
fi
major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "installing pgvector $PGVECTOR_VERSION into PostgreSQL $major for the PostgreSQL tests"

# The source, verified by the Go checksum database.
src=$(cd "$work" && GOFLAGS=-mod=mod "$GO" mod download -json "github.com/pgvector/pgvector@$PGVECTOR_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "could not download pgvector $PGVECTOR_VERSION through the Go module proxy"; exit 1; }
cp -r "$src" "$work/pgvector" && chmod -R u+w "$work/pgvector"

# The server headers of the installed minor version.
server_pkg="postgresql-$major"
dev_pkg="postgresql-server-dev-$major"
version=$(dpkg-query -W -f='${Version}' "$server_pkg" 2>/dev/null || true)
(cd "$work" && { apt-get download "$dev_pkg${version:+=$version}" >/dev/null 2>&1 ||
	{ $sudo apt-get update -qq && apt-get download "$dev_pkg${version:+=$version}" >/dev/null 2>&1; } ||
	apt-get download "$dev_pkg" >/dev/null; })
dpkg-deb -x "$work"/"$dev_pkg"_*.deb "$work/dev"
inc="$work/dev$("$pg_config" --includedir-server)"
[ -f "$inc/postgres.h" ] || { echo "no server headers in $dev_pkg"; exit 1; }

# pgvector's own flags (its Makefile): auto-vectorized distance loops. It is
# built on the machine that runs it, so -march=native is right here too.
cd "$work/pgvector"
objs=()
for c in src/*.c; do
	o="${c%.c}.o"
	gcc -O2 -fPIC -march=native -ftree-vectorize -fassociative-math -fno-signed-zeros -fno-trapping-math \
		-I"$inc" -c "$c" -o "$o"
	objs+=("$o")
done
gcc -shared -o vector.so "${objs[@]}"
ext=$(sed -n "s/^default_version = '\(.*\)'/\1/p" vector.control)
cp sql/vector.sql "sql/vector--$ext.sql"

$sudo install -m 0755 vector.so "$pkglibdir/vector.so"
$sudo install -m 0644 vector.control sql/vector--*.sql "$sharedir/extension/"
echo "pgvector $ext installed in $pkglibdir and $sharedir/extension"
