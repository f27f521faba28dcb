#!/usr/bin/env bash
# PostgreSQL on the same disk, for comparison with `syncbench commit`: a throw-away cluster (initdb in a
# temporary directory under DIR, unix socket only), synchronous_commit=on, wal_sync_method=fdatasync,
# and a pgbench script of one single-row INSERT per transaction (a 256-byte text value).
# Prints "clients tps latency_avg_ms" per client count. Stops the server and removes everything on exit.
# Usage: bench/commit_pgbench.sh DIR SECS CLIENTS(comma-separated)     (run as root: uses the postgres user)
set -euo pipefail
DIR=${1:?DIR}
SECS=${2:-5}
CLIENTS=${3:-1,2,4,8,16,32,64}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
PORT=${PORT:-5499}

WORK=$(mktemp -d "$DIR/.syncbench-bench-pg-XXXXXX")
chown postgres: "$WORK"
as_pg() { su postgres -s /bin/bash -c "$*"; }
cleanup() {
    as_pg "'$PGBIN/pg_ctl' -D '$WORK/data' -m fast stop" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

as_pg "'$PGBIN/initdb' -D '$WORK/data' -A trust -U postgres" >/dev/null
cat >>"$WORK/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$WORK'
port = $PORT
max_connections = 100
fsync = on
synchronous_commit = on
wal_sync_method = fdatasync
full_page_writes = on
shared_buffers = 256MB
max_wal_size = 4GB
CONF
as_pg "'$PGBIN/pg_ctl' -D '$WORK/data' -l '$WORK/server.log' -w start" >/dev/null
as_pg "psql -q -h '$WORK' -p $PORT -U postgres -c 'create table t (v text)'"
printf "insert into t values ('%s');\n" "$(head -c 256 /dev/zero | tr '\0' x)" >"$WORK/insert.sql"
chown postgres: "$WORK/insert.sql"

echo "clients tps latency_avg_ms"
for c in ${CLIENTS//,/ }; do
    jobs=$((c < 2 ? c : 2))
    out=$(as_pg "pgbench -n -M prepared -h '$WORK' -p $PORT -U postgres -f '$WORK/insert.sql' -c $c -j $jobs -T $SECS postgres" 2>&1)
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
    lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
    echo "$c $tps $lat"
done
