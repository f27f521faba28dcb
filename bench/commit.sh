#!/usr/bin/env bash
# The `syncbench commit` benchmarks of docs/benchmarks.md, side by side in one run:
#   1. one client, ROUNDS alternating rounds of:
#      a. the physical limit: `syncbench run` fdatasync, 512-byte sequential writes (one flush per commit);
#      b. the reference log, one client, 512-byte log records (472-byte payload + 40-byte header);
#   2. group commit vs the naive log (every commit syncs its own write) at 1..64 clients, 256-byte records;
#   3. PostgreSQL (pgbench, one INSERT per transaction, synchronous_commit=on) at the same client counts.
# Everything runs under PRIO (default `chrt -f 10`, SCHED_FIFO) so concurrent compiles on a shared
# machine disturb the measurements less; PRIO= disables it. Needs root for chrt and for pgbench's cluster.
# Usage: bench/commit.sh [DIR]   env: SECS (per point, default 5), ROUNDS (3), CLIENTS, BIN, RUN_BIN, OUT
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/var/tmp}
SECS=${SECS:-5}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-1,2,4,8,16,32,64}
BIN=${BIN:-target/release/syncbench}
RUN_BIN=${RUN_BIN:-$BIN} # a binary that has `syncbench run`
OUT=${OUT:-bench/out}
PRIO=${PRIO-chrt -f 10}
mkdir -p "$OUT"

for r in $(seq 1 "$ROUNDS"); do
    echo "== 1a. round $r: syncbench run, fdatasync, 512 B sequential writes"
    $PRIO "$RUN_BIN" run "$DIR" --methods fdatasync --sections a --size 512 --secs "$SECS" --json "$OUT/commit_run_$r.json"
    echo "== 1b. round $r: syncbench commit, 1 client, 512-byte log records"
    $PRIO "$BIN" commit "$DIR" --clients 1 --record-size 472 --secs "$SECS" --json "$OUT/commit_1client_$r.json"
done
echo "== 2. syncbench commit: group commit vs naive log"
$PRIO "$BIN" commit "$DIR" --clients "$CLIENTS" --with-baseline --secs "$SECS" --json "$OUT/commit_fdatasync.json"
echo "== 2b. syncbench commit: commit_delay at 16 clients (commit_siblings 5)"
$PRIO "$BIN" commit "$DIR" --clients 16 --commit-delay-us 0,20,50,100,200 --secs "$SECS" --json "$OUT/commit_delay.json"
echo "== 2c. syncbench commit: every method at 1 and 16 clients"
for m in fsync fdatasync open_datasync open_datasync+direct pwritev2_dsync io_uring_fdatasync none; do
    $PRIO "$BIN" commit "$DIR" --clients 1,16 --method "$m" --secs "$SECS" --json "$OUT/commit_method_$m.json"
done
echo "== 3. PostgreSQL pgbench"
$PRIO bash bench/commit_pgbench.sh "$DIR" "$SECS" "$CLIENTS" | tee "$OUT/commit_pgbench.txt"
python3 bench/commit_summary.py "$OUT"
