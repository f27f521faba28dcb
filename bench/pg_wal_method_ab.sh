#!/usr/bin/env bash
# PostgreSQL wal_sync_method A/B on DIR: pgbench -s 10 for each method in METHODS (default fdatasync
# open_datasync), the order rotated every round, ROUNDS rounds (6) of SECS seconds (5) per run with CLIENTS
# clients (1). Root; Debian's postgresql (the newest installed). Prints one line per run: round, method,
# clients, tps.
# usage: ROUNDS=6 SECS=5 CLIENTS="1 8" [PORT=5440] bash bench/pg_wal_method_ab.sh DIR
set -euo pipefail
[ -d "${1:-}" ] || { echo "usage: [ROUNDS=6] [SECS=5] [CLIENTS=\"1 8\"] [METHODS=...] $0 DIR (an existing directory)" >&2; exit 2; }
dir=$1; rounds=${ROUNDS:-6}; secs=${SECS:-5}; clients=${CLIENTS:-1}; methods=(${METHODS:-fdatasync open_datasync})
. "$(dirname "$0")/pg_cluster.sh"
pgbin=$(find_pgbin)
[ -x "${pgbin:-/nonexistent}/initdb" ] || { echo "PostgreSQL not found under /usr/lib/postgresql: apt-get install postgresql" >&2; exit 2; }
work=$dir/.syncbench-pgab-$$; mkdir "$work"; chown postgres: "$work"
cleanup() { pg_cluster_stop; rm -rf "$work"; }
trap cleanup EXIT INT TERM
pg_cluster_start "$work" "${PORT:-5440}"
n=${#methods[@]}
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    m=${methods[$(( (i + r) % n ))]}
    pg_use_method "$m"
    for c in $clients; do
      echo "r$r $m c$c $(pgbench_ -c "$c" -j "$c" -T "$secs" | sed -nE 's/^tps = ([0-9.]+).*/\1/p')"
    done
  done
done
