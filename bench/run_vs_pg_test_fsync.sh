#!/usr/bin/env bash
# Agreement with pg_test_fsync (issue #2 benchmark): fdatasync and fsync, one 8 KiB write per commit,
# rewriting offset 0 as pg_test_fsync does (`--pattern rewrite`), on the same directory, next to each other
# in time and alternating which tool goes first. How and why: bench/run_vs_pg_test_fsync.py.
# Target: median of syncbench ops/s / pg_test_fsync ops/s within 0.9-1.1. Needs the Debian package `postgresql`.
# Usage: bench/run_vs_pg_test_fsync.sh [DIR]     env: ROUNDS (default 12), SECS per test (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath "${1:-.}")
rounds=${ROUNDS:-12}
secs=${SECS:-2}
pg=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | sort -V | tail -1)
[ -x "$pg" ] || { echo "pg_test_fsync not found: apt-get install postgresql" >&2; exit 2; }
cargo build --release -q -p syncbench
echo "dir: $dir ($(findmnt -no FSTYPE --target "$dir")), $pg, $secs s per test, $(nproc) cores, $(uname -r), load average: $(cut -d" " -f1-3 /proc/loadavg)"
python3 bench/run_vs_pg_test_fsync.py "$PWD/target/release/syncbench" "$pg" "$dir" "$rounds" "$secs"
echo "load average after: $(cut -d" " -f1-3 /proc/loadavg)"
