#!/usr/bin/env bash
# A PostgreSQL for the audit tests, on loopback only: installs it from Debian packages if missing (root only),
# starts a private cluster (or reuses the one already running) and prints its URL on stdout. Prints nothing and
# succeeds when not root, so a developer's `make test` simply skips the PostgreSQL tests.
# `.ci/postgres.sh restart` restarts that cluster (the audit tests' reconnect check, when .ci/run asks for it).
set -euo pipefail
PORT="${COUCHGUARD_PG_PORT:-54329}"
DATA="${COUCHGUARD_PG_DATA:-/var/tmp/couchguard-pg-$PORT}"
URL="postgresql+psycopg://couchguard:couchguard@127.0.0.1:$PORT/couchguard_test"
say() { echo "postgres: $*" >&2; }
bin_dir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
as_postgres() { runuser -u postgres -- "$@"; }

if [ "$(id -u)" != 0 ]; then
  say "not root: not starting a server (set COUCHGUARD_TEST_POSTGRES_URL to use your own)"
  exit 0
fi
if [ "${1:-}" = restart ]; then
  # pg_ctl restart reuses the options the server was started with (postmaster.opts)
  as_postgres "$(bin_dir)/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 -m fast restart >&2
  exit 0
fi
if pg_isready -q -h 127.0.0.1 -p "$PORT" 2>/dev/null; then
  say "reusing the server on 127.0.0.1:$PORT"
  echo "$URL"
  exit 0
fi
if [ -z "$(bin_dir)" ]; then
  say "installing the postgresql package"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
fi
BIN="$(bin_dir)"

if [ ! -f "$DATA/PG_VERSION" ]; then
  mkdir -p "$DATA" && chown postgres:postgres "$DATA" && chmod 700 "$DATA"
  # peer auth on the socket for setting up, passwords over TCP
  as_postgres "$BIN/initdb" -D "$DATA" -U postgres --auth-local=peer --auth-host=scram-sha-256 >/dev/null
fi
# a throwaway test cluster: durability settings off for speed
as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 start \
  -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DATA -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >&2
psql_admin() { as_postgres psql -h "$DATA" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtA "$@"; }
if [ -z "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'couchguard'")" ]; then
  psql_admin -c "CREATE ROLE couchguard LOGIN PASSWORD 'couchguard'"
fi
if [ -z "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'couchguard_test'")" ]; then
  psql_admin -c "CREATE DATABASE couchguard_test OWNER couchguard"
fi
say "running on 127.0.0.1:$PORT (data in $DATA)"
echo "$URL"
