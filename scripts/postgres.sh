#!/usr/bin/env bash
# A private local PostgreSQL for Warren's conversation store: tests, several-node setups, the bench.
#
#   scripts/postgres.sh start    install Debian's postgresql if missing, start a private cluster if none answers
#   scripts/postgres.sh stop     stop the cluster this script started
#   scripts/postgres.sh status   exit 0 if the cluster answers
#   scripts/postgres.sh url      print the store.url for it (postgres://warren@127.0.0.1:15432/warren)
#   scripts/postgres.sh psql ARGS  run psql against it
#
# systemd does not run on the machines this targets: the cluster is initdb'd into a private
# directory and started with pg_ctl, listening on 127.0.0.1 only (trust authentication:
# loopback, private, for development and tests). As root, the server runs as the
# `postgres` user the Debian package creates (PostgreSQL refuses to run as root).
set -euo pipefail

DIR="${WARREN_POSTGRES_DIR:-/tmp/warren-postgres}"
# Below Linux's ephemeral range (32768-60999): a port in it can be held by any outgoing
# connection (a TIME_WAIT connection to epmd on 127.0.0.1:55432, once, made the server fail to bind).
PORT="${WARREN_POSTGRES_PORT:-15432}"
USER_NAME=warren
DB=warren

log() { echo "postgres.sh: $*" >&2; }

bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -n "$d" ] && echo "$d"
}

install_if_missing() {
    [ -n "$(bindir)" ] && return 0
    log "installing postgresql with apt-get"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y -qq postgresql >/dev/null
}

# Runs a server-side command as the cluster's owner.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

answers() {
    "$(bindir)/pg_isready" -q -h 127.0.0.1 -p "$PORT" 2>/dev/null
}

start() {
    install_if_missing
    local bin
    bin=$(bindir)
    if answers; then
        log "ready on $(url)"
        return 0
    fi
    mkdir -p "$DIR"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$DIR"
    if [ ! -s "$DIR/data/PG_VERSION" ]; then
        log "creating a private cluster in $DIR/data"
        as_owner "$bin/initdb" -D "$DIR/data" -U "$USER_NAME" --auth=trust -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 \
            || { cat "$DIR/initdb.log" >&2; exit 1; }
    fi
    log "starting PostgreSQL on 127.0.0.1:$PORT"
    as_owner "$bin/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c max_connections=200" start </dev/null >/dev/null 2>&1 \
        || { tail -20 "$DIR/server.log" >&2; exit 1; }
    if ! psql_ -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
        psql_ -d postgres -qc "CREATE DATABASE $DB" >/dev/null
    fi
    log "ready on $(url)"
}

stop() {
    local bin
    bin=$(bindir)
    [ -n "$bin" ] && [ -s "$DIR/data/postmaster.pid" ] || { log "not running"; return 0; }
    as_owner "$bin/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null && log "stopped"
}

url() { echo "postgres://$USER_NAME@127.0.0.1:$PORT/$DB?sslmode=disable"; }

psql_() { psql -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" "$@"; }

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) answers ;;
    url) url ;;
    psql) shift; psql_ -d "$DB" "$@" ;;
    *) echo "usage: $0 start|stop|status|url|psql ARGS" >&2; exit 2 ;;
esac
