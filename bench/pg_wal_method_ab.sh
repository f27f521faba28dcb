#!/usr/bin/env bash
# PostgreSQL wal_sync_method A/B on DIR: pgbench -s 10 for each method in METHODS (default fdatasync
# open_datasync), the order rotated every round, ROUNDS rounds (6) of SECS seconds (5) per run with CLIENTS
# clients (1). Root; Debian's postgresql (the newest installed). Prints one line per run: round, method, clients, tps.
# usage: ROUNDS=6 SECS=5 CLIENTS="1 8" bash bench/pg_wal_method_ab.sh DIR
set -euo pipefail
dir=$1; rounds=${ROUNDS:-6}; secs=${SECS:-5}; clients=${CLIENTS:-1}; methods=(${METHODS:-fdatasync open_datasync})
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "${pgbin:-/nonexistent}/initdb" ] || { echo "PostgreSQL not found under /usr/lib/postgresql: apt-get install postgresql" >&2; exit 2; }
work=$dir/.syncbench-pgab-$$; mkdir "$work"; chown postgres: "$work"
as_pg() { runuser -u postgres -- "$@"; }
cleanup() { as_pg $pgbin/pg_ctl -D $work/data -m immediate stop >/dev/null 2>&1 || true; rm -rf $work; }
trap cleanup EXIT
as_pg $pgbin/initdb -D $work/data -A trust >/dev/null
cat >>$work/data/postgresql.conf <<CONF
listen_addresses = ''
unix_socket_directories = '$work'
port = 5440
shared_buffers = 256MB
max_wal_size = 4GB
checkpoint_timeout = 30min
CONF
as_pg $pgbin/pg_ctl -D $work/data -l $work/log -w start >/dev/null
psql_() { as_pg $pgbin/psql -h $work -p 5440 -d postgres -qtAX -c "$1"; }
as_pg $pgbin/pgbench -h $work -p 5440 -i -s 10 -q postgres >/dev/null 2>&1
n=${#methods[@]}
for r in $(seq 1 $rounds); do
  for i in $(seq 0 $((n-1))); do m=${methods[$(( (i + r) % n ))]}
    psql_ "ALTER SYSTEM SET wal_sync_method = '$m'"; psql_ "SELECT pg_reload_conf()" >/dev/null; psql_ CHECKPOINT
    for c in $clients; do
    t=$(as_pg $pgbin/pgbench -h $work -p 5440 -n -c $c -j $c -T $secs postgres 2>/dev/null | sed -nE 's/^tps = ([0-9.]+).*/\1/p')
    echo "r$r $m c$c $t"; done
  done
done
