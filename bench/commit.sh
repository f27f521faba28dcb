#!/usr/bin/env bash
# The `syncbench commit` benchmarks of docs/benchmarks/commit.md, side by side in one run:
#   1. the physical limit of one client: `syncbench run` fdatasync, 512-byte sequential writes;
#   2. one client of the reference log writing 512-byte log records (472-byte payload + 40-byte header);
#   3. group commit vs the naive log (every commit syncs its own write) at 1..64 clients, 256-byte records;
#   4. PostgreSQL (pgbench, one INSERT per transaction) at the same client counts.
# Usage: bench/commit.sh [DIR]   env: SECS (per point, default 5), CLIENTS, BIN, RUN_BIN, OUT
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/var/tmp}
SECS=${SECS:-5}
CLIENTS=${CLIENTS:-1,2,4,8,16,32,64}
BIN=${BIN:-target/release/syncbench}
RUN_BIN=${RUN_BIN:-$BIN} # a binary that has `syncbench run`
OUT=${OUT:-bench/out}
mkdir -p "$OUT"

echo "== 1. syncbench run: fdatasync, 512 B sequential writes (one flush per commit)"
"$RUN_BIN" run "$DIR" --methods fdatasync --sections a --size 512 --secs "$SECS" --json "$OUT/commit_run_fdatasync_512.json"
echo "== 2. syncbench commit: 1 client, 512-byte log records"
"$BIN" commit "$DIR" --clients 1 --record-size 472 --secs "$SECS" --json "$OUT/commit_1client_512.json"
echo "== 3. syncbench commit: group commit vs naive log"
"$BIN" commit "$DIR" --clients "$CLIENTS" --with-baseline --secs "$SECS" --json "$OUT/commit_fdatasync.json"
echo "== 4. PostgreSQL pgbench"
bash bench/commit_pgbench.sh "$DIR" "$SECS" "$CLIENTS" | tee "$OUT/commit_pgbench.txt"
python3 bench/commit_summary.py "$OUT"
