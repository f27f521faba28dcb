#!/usr/bin/env bash
# watch's detection and false alarms on a lab disk (issue #35), as root:
#   bench/watch_detect.sh BIN OUT [TRIALS] [PROFILE] [STEP_US]
# Each trial: a fresh lab disk (PROFILE, default hdd-7200: 8.5 ms flush), `watch --every 2s --duty 25%` until
# its baseline is learned and 6 more intervals pass (all must say no change: the steady part), then
# `lab set --flush-us STEP_US` (default 17000: twice the profile's flush) and count the intervals that START
# after the step until watch reports any case slower (detected when within 3). OUT gets one log per trial and a
# summary line per trial in OUT/summary.txt.
set -euo pipefail
usage="usage: bench/watch_detect.sh BIN OUT [TRIALS] [PROFILE] [STEP_US]"
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || usage_error
bin=$1 out=$2 trials=${3:-10} profile=${4:-hdd-7200} step_us=${5:-17000}
[ -x "$bin" ] || usage_error "; $bin is not an executable"
mkdir -p "$out"
exit_on_signals
work=$(mktemp -d)
mount=$work/mnt
mkdir -p "$mount"
cleanup() {
  pkill -TERM -f "syncbench watch $mount" 2>/dev/null || true
  sleep 1
  "$bin" lab down "$mount" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "bin: $bin ($("$bin" --version)) profile: $profile step: ${step_us} µs load: $(cut -d' ' -f1-3 /proc/loadavg) date: $(date -u +%FT%TZ)" | tee "$out/summary.txt"
for trial in $(seq 1 "$trials"); do
  log=$out/trial-$trial.log
  "$bin" lab up --profile "$profile" --seed "$trial" "$mount" > /dev/null
  "$bin" watch "$mount" --every 2s --duty 25% --intervals 26 > "$log" 2>&1 &
  watch_pid=$!
  # The baseline is learned when a line says "no change"; then 6 steady intervals.
  until grep -q "no change" "$log"; do sleep 1; kill -0 $watch_pid 2>/dev/null || break; done
  steady_start=$(grep -c "" "$log")
  until [ "$(grep -c "" "$log")" -ge $((steady_start + 6)) ]; do sleep 1; kill -0 $watch_pid 2>/dev/null || break; done
  step_at=$(date -u +%FT%TZ)
  "$bin" lab set "$mount" --flush-us "$step_us" > /dev/null
  lines_at_step=$(grep -c "" "$log")
  wait $watch_pid || true
  "$bin" lab down "$mount" > /dev/null
  # Interval lines start with a timestamp; the first line after the step belongs to an interval that
  # started before it (partly on the old cost), so it is not counted.
  false_alarms=$(head -n "$lines_at_step" "$log" | grep -c "CHANGED" || true)
  detected=$(tail -n +"$((lines_at_step + 2))" "$log" | grep -n "CHANGED [a-z_0-9]* [a-z_0-9]* slower" | head -1 | cut -d: -f1 || true)
  echo "trial $trial: step at $step_at; changes before the step: $false_alarms; detected in interval ${detected:-never} after the step" | tee -a "$out/summary.txt"
done
