#!/usr/bin/env bash
# watch's false alarms on an unchanged disk (issue #35):
#   bench/watch_false_alarms.sh BIN DIR OUT [INTERVALS]
# Runs `watch DIR --every 2s --duty 25% --intervals N` (default 200) and counts intervals judged, disturbed,
# still learning, and reporting a change (every change on an unchanged disk is a false alarm). OUT gets
# the log and a summary line.
set -euo pipefail
usage="usage: bench/watch_false_alarms.sh BIN DIR OUT [INTERVALS]"
. "$(dirname "$0")/lib.sh"
[ $# -ge 3 ] || usage_error
[ -x "$1" ] || usage_error "; $1 is not an executable"
[ -d "$2" ] || usage_error "; $2 is not a directory"
bin=$1 dir=$2 out=$3 n=${4:-200}
mkdir -p "$out"
echo "bin: $bin ($("$bin" --version)) dir: $dir intervals: $n load: $(cut -d' ' -f1-3 /proc/loadavg) date: $(date -u +%FT%TZ)" > "$out/summary.txt"
"$bin" watch "$dir" --every 2s --duty 25% --intervals "$n" > "$out/watch.log" 2>&1
judged=$(grep -c -e "no change" -e "CHANGED" -e "verdict appeared" -e "changed$" "$out/watch.log" || true)
{
  echo "intervals: $(grep -c "^20" "$out/watch.log" || true)"
  echo "learning: $(grep -c "learning (" "$out/watch.log" || true)"
  echo "disturbed: $(grep -c "disturbed by other I/O" "$out/watch.log" || true)"
  echo "skipped (device busy): $(grep -c "interval skipped" "$out/watch.log" || true)"
  echo "judged: $judged"
  echo "numeric changes reported (false alarms): $(grep -c "CHANGED" "$out/watch.log" || true)"
  echo "verdicts appeared/gone, facts changed: $(grep -c -e "verdict appeared" -e "verdict gone" -e " changed" "$out/watch.log" || true)"
  echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$out/summary.txt"
