#!/usr/bin/env bash
# A throwaway PostgreSQL server on a loopback port, for tests and benchmarks.
#   source scripts/pg.sh; pg_start 55432   → exports PG_URL, PG_DIR, PG_BIN
#   pg_stop                                → stops it and deletes its folder
# Runs the server as the `postgres` user when we are root (PostgreSQL refuses root).

pg_bin_dir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

pg_as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
  local port=${1:-55432}
  PG_BIN=$(pg_bin_dir) || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; return 1; }
  PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/routeboard-pg.XXXXXX")
  chmod 755 "$PG_DIR"
  [ "$(id -u)" = 0 ] && chown postgres: "$PG_DIR"
  pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log" >&2; return 1; }
  pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" start >/dev/null \
    || { cat "$PG_DIR/server.log" >&2; return 1; }
  PG_PORT=$port
  PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
  export PG_BIN PG_DIR PG_PORT PG_URL
}

pg_createdb() {
  pg_as "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$1"
  echo "postgres://postgres@127.0.0.1:$PG_PORT/$1"
}

pg_stop() {
  [ -n "${PG_DIR:-}" ] || return 0
  pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=
}
