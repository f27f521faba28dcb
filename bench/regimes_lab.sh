#!/usr/bin/env bash
# Regime detection on a lab disk whose flush cost is switched live (`syncbench lab set`) while `run`
# measures it, and on the same disk left steady. Each run's JSON says whether the device switched
# (`.regimes.switching`); the script counts the runs that say so in each mode.
#
#   sudo bash bench/regimes_lab.sh BIN OUT [RUNS] [FAST_US] [SLOW_US] [DWELL_S]
#
# BIN: the syncbench binary; OUT: directory for the raw output (created); RUNS per mode (default 10);
# the two flush costs (default 180 and 3800 µs: the project VM's two regimes) and how long each lasts
# (default 3 s). Each run is `run --sections a` with the durable methods that write through the page
# cache or direct, not `write` and `direct` (their 500 MB of dirty pages would be written back through the
# lab's FUSE server for the rest of the run: a steady disk would not stay steady); the steady mode keeps
# the disk at FAST_US. The lab server's threads and each `run` get nice -10: on this 2-vCPU VM with other
# builds running (load 15-20), a starved FUSE server or timing loop gives the "steady" disk slow phases of
# its own (recorded in bench/results/regimes-2026-11-28/tuning-*), and the test is about the disk's.
# The disk image goes to /dev/shm (TMPDIR for `lab up`): on /tmp it sits on the VM's own disk, whose
# regimes then reach the emulated disk through the server's writes to the image (recorded: a lab disk
# left at 180 µs showed 20-50 ms phases in half its windows, tuning-image-on-vda).
# With RT=1 the lab server's threads run SCHED_FIFO (priority 20) and each `run` SCHED_FIFO 10 instead of
# nice -10: under load 20+ a nice -10 server still waits milliseconds for a CPU in bursts, which made the
# steady disk slow in two levels for every case at once (bench/results/firstscreen-2026-11-29/regimes).
# MODES (default "switching steady") picks the modes. LAB_BIN (default BIN) serves the lab disk: a release build keeps the emulated
# disk's own CPU cost low when BIN is a debug build.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: sudo bash bench/regimes_lab.sh BIN OUT [RUNS] [FAST_US] [SLOW_US] [DWELL_S]"
[ $# -ge 2 ] || usage_error
bin=$1 out=$2 runs=${3:-10} fast=${4:-180} slow=${5:-3800} dwell=${6:-3}
[ -x "$bin" ] || usage_error "; $bin is not an executable"
mkdir -p "$out"
methods=fdatasync,fsync,open_datasync,fdatasync+direct,open_datasync+direct,pwritev2_dsync,io_uring_fdatasync
work=$(mktemp -d /tmp/regimes-lab.XXXXXX)
mount=$work/mnt
mkdir "$mount"
switcher=
cleanup() {
  [ -n "$switcher" ] && kill "$switcher" 2>/dev/null && wait "$switcher" 2>/dev/null
  "$bin" lab down "$mount" >/dev/null 2>&1 || true
  rmdir "$mount" "$work" 2>/dev/null || true
}
trap cleanup EXIT
exit_on_signals
echo "bin: $bin  lab: ${LAB_BIN:-$bin}  runs: $runs per mode  flush: $fast/$slow µs, $dwell s each  load: $(cut -d' ' -f1-3 /proc/loadavg)  date: $(date -u +%FT%TZ)" | tee "$out/summary.txt"
lab_bin=${LAB_BIN:-$bin}
TMPDIR=${LAB_TMPDIR:-/dev/shm} "$lab_bin" lab up --profile ssd-200us --flush-us "$fast" --size 1GiB "$mount" | tee -a "$out/summary.txt"
server=$(sed -n 's/.*server pid \([0-9]*\).*/\1/p' "$out/summary.txt" | tail -1)
for task in /proc/"$server"/task/*; do
  if [ "${RT:-0}" = 1 ]; then chrt -f -p 20 "${task##*/}" >/dev/null; else renice -n -10 -p "${task##*/}" >/dev/null; fi
done
prio=(nice -n -10)
[ "${RT:-0}" = 1 ] && prio=(chrt -f 10)
echo "scheduling: ${prio[*]} for run, lab server $([ "${RT:-0}" = 1 ] && echo 'SCHED_FIFO 20' || echo 'nice -10')" | tee -a "$out/summary.txt"

switch_forever() {
  while true; do
    "$bin" lab set "$mount" --flush-us "$slow" >>"$out/switches.log"; sleep "$dwell"
    "$bin" lab set "$mount" --flush-us "$fast" >>"$out/switches.log"; sleep "$dwell"
  done
}

for mode in ${MODES:-switching steady}; do
  found=0
  for i in $(seq 1 "$runs"); do
    if [ "$mode" = switching ]; then switch_forever & switcher=$!; fi
    "${prio[@]}" "$bin" run "$mount" --sections a --methods "$methods" --log --json "$out/$mode-$i.json" >"$out/$mode-$i.txt" 2>"$out/$mode-$i.err" || true
    if [ -n "$switcher" ]; then kill "$switcher"; wait "$switcher" 2>/dev/null || true; switcher=; fi
    "$bin" lab set "$mount" --flush-us "$fast" >/dev/null
    said=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])).get("regimes") or {}; print("yes" if r.get("switching") else "no", r.get("cases_with_regimes"), r.get("cases_analysed"), r.get("switch_every_s"))' "$out/$mode-$i.json")
    echo "$mode run $i: regimes $said  load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/summary.txt"
    case $said in yes*) found=$((found + 1)) ;; esac
  done
  echo "$mode: regimes reported in $found of $runs runs" | tee -a "$out/summary.txt"
  # The device model's own latency since the lab came up: what it charged, whatever the stack added.
  "$bin" lab stats "$mount" >"$out/lab-stats-after-$mode.txt" 2>&1 || true
done
