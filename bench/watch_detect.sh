#!/usr/bin/env bash
# watch's detection on a lab disk (issue #35), as root:
#   bench/watch_detect.sh BIN OUT [TRIALS] [PROFILE] [STEP]
# Each trial: a fresh lab disk (PROFILE, default hdd-7200: 8.5 ms flush), `watch --every 2s --duty 25%` until
# its baseline is learned and 6 more intervals pass (all must say no change: the steady part), then the step,
# and count the intervals that START after the step until watch reports it (detected when within 3).
# STEP is one of:
#   a number of µs (default 17000: twice hdd-7200's flush): `lab set --flush-us STEP`, reported as any case
#     CHANGED ... slower;
#   ignores-flush: `lab set --honesty ignores-flush --flush-us 0`, the disk starts acknowledging flushes at
#     once without making anything durable (the cheating SSD, a host cache switched to unsafe), reported as
#     "verdict appeared: flush_faster_than_device" (the device-side flush latency of watch's own commits);
#   ignores-flush-same-cost: `lab set --honesty ignores-flush` alone: the lab still charges the profile's
#     flush time, so nothing a timing can see changes (a power cut can: `syncbench powercut`); counted the
#     same way, to show that limit.
# The lab's server runs at nice -10 (the disk is unchanged only if its emulation is not starved of CPU);
# watch itself runs at the caller's priority. OUT gets one log per trial and a summary line per trial in
# OUT/summary.txt.
set -euo pipefail
usage="usage: bench/watch_detect.sh BIN OUT [TRIALS] [PROFILE] [STEP]"
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || usage_error
bin=$1 out=$2 trials=${3:-10} profile=${4:-hdd-7200} step=${5:-17000}
case $step in
  ignores-flush) set_args=(--honesty ignores-flush --flush-us 0) reported="verdict appeared: flush_faster_than_device" ;;
  ignores-flush-same-cost) set_args=(--honesty ignores-flush) reported="verdict appeared: flush_faster_than_device" ;;
  *[!0-9]* | "") usage_error "; STEP is a number of µs, ignores-flush or ignores-flush-same-cost" ;;
  *) set_args=(--flush-us "$step") reported="CHANGED [a-z_0-9]* [a-z_0-9]* slower" ;;
esac
[ -x "$bin" ] || usage_error "; $bin is not an executable"
mkdir -p "$out"
exit_on_signals
work=$(mktemp -d)
mount=$work/mnt
mkdir -p "$mount"
watch_pid=
cleanup() {
  [ -n "$watch_pid" ] && kill -TERM "$watch_pid" 2>/dev/null && wait "$watch_pid" 2>/dev/null || true
  "$bin" lab down "$mount" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "bin: $bin ($("$bin" --version)) profile: $profile step: $step (lab set ${set_args[*]}) load: $(cut -d' ' -f1-3 /proc/loadavg) date: $(date -u +%FT%TZ)" | tee "$out/summary.txt"
for trial in $(seq 1 "$trials"); do
  log=$out/trial-$trial.log
  server=$("$bin" lab up --profile "$profile" --seed "$trial" "$mount" | sed -n 's/.*server pid \([0-9]*\).*/\1/p')
  # The emulated disk must behave as its model says, not as the machine's load: on a shared 2-vCPU VM a
  # starved lab server makes every flush several times slower (a real change of the disk watch sees).
  renice -n -10 -p "$server" > /dev/null
  "$bin" watch "$mount" --every 2s --duty 25% --intervals 26 > "$log" 2>&1 &
  watch_pid=$!
  # The baseline is learned when a line says "no change"; then 6 steady intervals.
  until grep -q "no change" "$log"; do sleep 1; kill -0 $watch_pid 2>/dev/null || break; done
  steady_start=$(grep -c "" "$log")
  until [ "$(grep -c "" "$log")" -ge $((steady_start + 6)) ]; do sleep 1; kill -0 $watch_pid 2>/dev/null || break; done
  step_at=$(date -u +%FT%TZ)
  "$bin" lab set "$mount" "${set_args[@]}" > /dev/null
  lines_at_step=$(grep -c "" "$log")
  wait $watch_pid || true
  watch_pid=
  "$bin" lab down "$mount" > /dev/null
  # Interval lines start with a timestamp; the first line after the step belongs to an interval that
  # started before it (partly on the old cost), so it is not counted.
  false_alarms=$(head -n "$lines_at_step" "$log" | grep -c -e "CHANGED" -e "verdict appeared" -e "verdict gone" || true)
  detected=$(tail -n +"$((lines_at_step + 2))" "$log" | grep -n "$reported" | head -1 | cut -d: -f1 || true)
  echo "trial $trial: step at $step_at; changes before the step: $false_alarms; detected in interval ${detected:-never} after the step" | tee -a "$out/summary.txt"
done
