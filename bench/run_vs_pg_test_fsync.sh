#!/usr/bin/env bash
# Agreement with pg_test_fsync (issue #2 benchmark): fdatasync and fsync, one 8 KiB write per commit,
# rewriting offset 0 as pg_test_fsync does (`--pattern rewrite`), on the same directory, run alternately.
# Target: syncbench ops/s / pg_test_fsync ops/s within 0.9-1.1. Needs the Debian package `postgresql`.
# Usage: bench/run_vs_pg_test_fsync.sh [DIR]     env: ROUNDS (default 3), SECS per test (default 2)
# pg_test_fsync has no test selection, so each of its rounds runs all 16 tests (about 16 x SECS seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath "${1:-.}")
rounds=${ROUNDS:-3}
secs=${SECS:-2}
pg=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | sort -V | tail -1)
[ -x "$pg" ] || { echo "pg_test_fsync not found: apt-get install postgresql" >&2; exit 2; }
cargo build --release -q -p syncbench
bin=$PWD/target/release/syncbench
echo "dir: $dir ($(findmnt -no FSTYPE --target "$dir")), $pg, $secs s per test, load average: $(cut -d" " -f1-3 /proc/loadavg)"
echo "round  method     pg_ops_per_s  syncbench_ops_per_s  ratio  syncbench_ci95"
for i in $(seq "$rounds"); do
  pg_out=$(LC_ALL=C "$pg" -s "$secs" -f "$dir/.syncbench-pg_test_fsync")
  # Budget 5x SECS: syncbench's minimum time before an early stop (0.2 x budget) is then pg's SECS.
  sb_json=$("$bin" run --pattern rewrite --sections a --methods fdatasync,fsync --secs "$((secs * 5))" --json - "$dir" 2>/dev/null)
  for m in fdatasync fsync; do
    p=$(awk -v m="$m" '/one 8kB write/ {on=1} on && $1 == m {print $2; exit}' <<<"$pg_out")
    read -r s ci < <(python3 -c 'import json,sys
d = json.loads(sys.argv[1]); r = [r for r in d["results"] if r["method"] == sys.argv[2]][0]
print(r["ops_per_s"], r["ci95_rel"])' "$sb_json" "$m")
    printf "%5d  %-9s  %12.1f  %19.1f  %5.3f  %.3f\n" "$i" "$m" "$p" "$s" "$(python3 -c "print($s/$p)")" "$ci"
  done
done
