#!/usr/bin/env bash
# Why PostgreSQL's open_datasync beats fdatasync on loop-backed xfs (1 client).
# xfs on a loop device (3 GiB file in /var/tmp), PostgreSQL 15, pgbench -s 10 with one client: two alternating
# rounds of fdatasync vs open_datasync, then one traced run of each (`syncbench trace`) to see what the WAL
# writes and syncs per commit. Root; Debian's postgresql 15. Traces go to OUT (default /tmp).
# usage: bench/pg_open_datasync_xfs.sh
set -euo pipefail
pgbin=/usr/lib/postgresql/15/bin
bin=$(cd "$(dirname "$0")/.." && pwd)/target/release/syncbench
out=${OUT:-/tmp}
truncate -s 3G /var/tmp/pgx-xfs.img; mkfs.xfs -q -f /var/tmp/pgx-xfs.img; mkdir -p /mnt/pgx; mount -o loop /var/tmp/pgx-xfs.img /mnt/pgx
work=/mnt/pgx/w; mkdir $work; chown postgres: $work
as_pg() { runuser -u postgres -- "$@"; }
cleanup() { as_pg $pgbin/pg_ctl -D $work/data -m immediate stop >/dev/null 2>&1 || true; sleep 1; umount /mnt/pgx || true; rm -f /var/tmp/pgx-xfs.img; }
trap cleanup EXIT
as_pg $pgbin/initdb -D $work/data -A trust >/dev/null
cat >>$work/data/postgresql.conf <<CONF
listen_addresses = ''
unix_socket_directories = '$work'
port = 5439
shared_buffers = 256MB
max_wal_size = 4GB
checkpoint_timeout = 30min
CONF
as_pg $pgbin/pg_ctl -D $work/data -l $work/log -w start >/dev/null
psql_() { as_pg $pgbin/psql -h $work -p 5439 -d postgres -qtAX -c "$1"; }
as_pg $pgbin/pgbench -h $work -p 5439 -i -s 10 -q postgres >/dev/null 2>&1
for r in 1 2; do for m in fdatasync open_datasync; do
  psql_ "ALTER SYSTEM SET wal_sync_method = '$m'"; psql_ "SELECT pg_reload_conf()" >/dev/null; psql_ CHECKPOINT
  echo "$m $(as_pg $pgbin/pgbench -h $work -p 5439 -n -c 1 -T 8 postgres 2>/dev/null | grep '^tps')"
done; done
as_pg $pgbin/pg_ctl -D $work/data -w stop >/dev/null
for m in fdatasync open_datasync; do
  sed -i "/^wal_sync_method/d" $work/data/postgresql.auto.conf
  echo "wal_sync_method = '$m'" >> $work/data/postgresql.auto.conf
  ( cd "$out" && $bin trace --json $out/trace-$m.json -- runuser -u postgres -- $pgbin/postgres -D $work/data > $out/trace-$m.txt 2>&1 ) &
  sleep 3
  echo "traced $m $(as_pg $pgbin/pgbench -h $work -p 5439 -n -c 1 -t 5000 postgres 2>/dev/null | grep '^tps')"
  as_pg $pgbin/pg_ctl -D $work/data -w stop >/dev/null || true
  wait
done
