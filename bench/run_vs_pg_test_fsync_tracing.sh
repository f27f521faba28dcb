#!/usr/bin/env bash
# Does device accounting's tracing slow run's commits? pg_test_fsync, syncbench as root (block tracepoints
# on) and syncbench as `nobody` (no tracepoints) next to each other, order rotated per round. How and why:
# bench/run_vs_pg_test_fsync_tracing.py. Needs root, setpriv and the Debian package `postgresql`.
# Usage: bench/run_vs_pg_test_fsync_tracing.sh DIR     env: ROUNDS (default 12), SECS per test (default 2),
# NO_BUILD=1 to measure target/release/syncbench as it is
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root: the traced runs need the tracepoints" >&2; exit 2; }
dir=$(realpath "${1:?usage: bench/run_vs_pg_test_fsync_tracing.sh DIR}")
rounds=${ROUNDS:-12}
secs=${SECS:-2}
pg=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | sort -V | tail -1)
[ -x "$pg" ] || { echo "pg_test_fsync not found: apt-get install postgresql" >&2; exit 2; }
uid=$(id -u nobody)
# The unprivileged runs need a directory of their own to write in; removed at the end.
work=$(mktemp -d "$dir/.syncbench-tracing-ab-XXXXXX")
trap 'rm -rf -- "$work"' EXIT
chown "$uid" "$work"
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p syncbench
echo "dir: $work ($(findmnt -no FSTYPE --target "$dir")), $pg, $secs s per test, $(nproc) cores, $(uname -r), load average: $(cut -d" " -f1-3 /proc/loadavg)"
python3 bench/run_vs_pg_test_fsync_tracing.py "$PWD/target/release/syncbench" "$pg" "$work" "$rounds" "$secs" "$uid"
echo "load average after: $(cut -d" " -f1-3 /proc/loadavg)"
