#!/usr/bin/env bash
# Whether and why PostgreSQL's open_datasync beats fdatasync on loop-backed xfs (1 client): it did by 13-28% on
# the morning of 2026-11-23 and not in the afternoon (docs/benchmarks.md, "advise").
# xfs on a loop device (3 GiB file in /var/tmp), PostgreSQL 15, pgbench -s 10 with one client: two alternating
# rounds of fdatasync vs open_datasync, then one traced run of each (`syncbench trace`) to see what the WAL
# writes and syncs per commit. Root; Debian's postgresql 15. Traces go to OUT (default /tmp).
# usage: bench/pg_open_datasync_xfs.sh
set -euo pipefail
pgbin=/usr/lib/postgresql/15/bin
bin=$(cd "$(dirname "$0")/.." && pwd)/target/release/syncbench
out=${OUT:-/tmp}
truncate -s 3G /var/tmp/pgx-xfs.img; mkfs.xfs -q -f /var/tmp/pgx-xfs.img; mkdir -p /mnt/pgx; mount -o loop /var/tmp/pgx-xfs.img /mnt/pgx
. "$(dirname "$0")/pg_cluster.sh"
work=/mnt/pgx/w; mkdir $work; chown postgres: $work
cleanup() { pg_cluster_stop; sleep 1; umount /mnt/pgx || true; rm -f /var/tmp/pgx-xfs.img; }
trap cleanup EXIT
pg_cluster_start $work 5439
for r in 1 2; do for m in fdatasync open_datasync; do
  pg_use_method $m
  echo "$m $(pgbench_ -c 1 -T 8 | grep '^tps')"
done; done
as_pg $pgbin/pg_ctl -D $work/data -w stop >/dev/null
for m in fdatasync open_datasync; do
  sed -i "/^wal_sync_method/d" $work/data/postgresql.auto.conf
  echo "wal_sync_method = '$m'" >> $work/data/postgresql.auto.conf
  ( cd "$out" && $bin trace --json $out/trace-$m.json -- runuser -u postgres -- $pgbin/postgres -D $work/data > $out/trace-$m.txt 2>&1 ) &
  sleep 3
  echo "traced $m $(pgbench_ -c 1 -t 5000 | grep '^tps')"
  as_pg $pgbin/pg_ctl -D $work/data -w stop >/dev/null || true
  wait
done
