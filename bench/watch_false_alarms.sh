#!/usr/bin/env bash
# watch's false alarms and duty on an unchanged disk (issue #35):
#   bench/watch_false_alarms.sh BIN DIR OUT [INTERVALS] [EVERY] [DUTY]
# Runs `watch DIR --every EVERY --duty DUTY --intervals N` (defaults 200, 2s, 25%) with a state file and a
# textfile in OUT, and counts intervals judged, disturbed, still learning, skipped, and reporting a change
# (every change on an unchanged disk is a false alarm). Beside it: the load average every 30 s
# (OUT/load.txt), the commit chain's run-queue wait per interval by how the interval was judged, and the
# lowest block device's own counters (/sys/block/DEV/stat: io_ticks, field 10)
# read before and after the run, so the device busy time is quoted by the device itself: on a disk only
# watch uses (a lab disk) all of it is watch's; on a shared disk it is everyone's, and watch's own share is
# the busy time inside its measuring windows (`syncbench_watch_device_busy_ratio`, the state's totals).
# OUT gets the log, the state, the textfile and a summary.
set -euo pipefail
usage="usage: bench/watch_false_alarms.sh BIN DIR OUT [INTERVALS] [EVERY] [DUTY]"
. "$(dirname "$0")/lib.sh"
[ $# -ge 3 ] || usage_error
[ -x "$1" ] || usage_error "; $1 is not an executable"
[ -d "$2" ] || usage_error "; $2 is not a directory"
bin=$1 dir=$2 out=$3 n=${4:-200} every=${5:-2s} duty=${6:-25%}
mkdir -p "$out"
exit_on_signals
# The lowest block device under DIR: the mount's source, or the disk a partition belongs to.
dev=$(basename "$(findmnt -no SOURCE -T "$dir")")
[ -e "/sys/class/block/$dev/partition" ] && dev=$(basename "$(readlink -f "/sys/class/block/$dev/..")")
io_ticks() { awk '{print $10}' "/sys/block/$dev/stat"; }
loadavg() { while sleep 30; do echo "$(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)"; done >> "$out/load.txt"; }
loadavg &
sampler=$!
trap 'kill $sampler 2>/dev/null || true' EXIT
echo "bin: $bin ($("$bin" --version)) dir: $dir device: $dev intervals: $n every: $every duty: $duty load: $(cut -d' ' -f1-3 /proc/loadavg) date: $(date -u +%FT%TZ)" > "$out/summary.txt"
ticks_before=$(io_ticks) t0=$(date +%s.%N)
"$bin" watch "$dir" --every "$every" --duty "$duty" --intervals "$n" --state "$out/state.json" \
  --openmetrics "$out/syncbench.prom" > "$out/watch.log" 2>&1
ticks_after=$(io_ticks) t1=$(date +%s.%N)
judged=$(grep -c -e "no change" -e "CHANGED" -e "faster than baseline" -e "verdict appeared" -e "changed$" "$out/watch.log" || true)
{
  echo "intervals: $(grep -c "^20" "$out/watch.log" || true)"
  # The interval that completes the baseline (the 8th) already prints "no change" and counts as judged here.
  echo "learning: $(grep -c "^20.*learning (" "$out/watch.log" || true)"
  echo "disturbed: $(grep -c "disturbed: " "$out/watch.log" || true)"
  for cause in "device I/O not ours" "CPU steal" "another syncbench" "cpu starved" "slower above the device"; do
    echo "  disturbed by $cause: $(grep -c "disturbed: .*$cause" "$out/watch.log" || true)"
  done
  echo "skipped (device busy): $(grep -c "interval skipped" "$out/watch.log" || true)"
  echo "judged: $judged"
  echo "numeric changes reported (false alarms): $(grep -c "CHANGED" "$out/watch.log" || true)"
  # A disk confirmed faster is re-learned, not a change (docs/watch.md): counted apart.
  echo "faster than baseline, re-learning (not a change): $(grep -c "faster than baseline" "$out/watch.log" || true)"
  echo "verdicts appeared/gone, facts changed: $(grep -c -e "verdict appeared" -e "verdict gone" -e " changed" "$out/watch.log" || true)"
  # The commit chain's run-queue wait per interval (`cpu wait N%`), by what the interval was judged.
  python3 - "$out/watch.log" <<'EOF'
import re, statistics, sys
waits = {"undisturbed": [], "cpu starved": [], "disturbed otherwise": []}
for line in open(sys.argv[1]):
    m = re.search(r"cpu wait (\d+)%", line)
    if not m:
        continue
    kind = "cpu starved" if "cpu starved" in line else "disturbed otherwise" if "disturbed: " in line else "undisturbed"
    waits[kind].append(int(m.group(1)))
for kind, w in waits.items():
    if w:
        q = statistics.quantiles(w, n=20) if len(w) > 1 else [w[0]] * 19
        print(f"cpu wait of {kind} intervals: n {len(w)}, median {statistics.median(w)}%, p5 {q[0]:.0f}%, p95 {q[-1]:.0f}%, max {max(w)}%")
# The other I/O in the seconds before each window (`before: N written, busy P% of S`), by how the
# undisturbed intervals were judged: does a slower interval follow other I/O more often than a steady one?
UNIT = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
kinds = {"slower (changed or not confirmed yet)": [], "faster": [], "no change": [], "disturbed": []}
for line in open(sys.argv[1]):
    m = re.search(r"before: ([\d.]+) (B|KiB|MiB|GiB) written, busy (\d+)%", line)
    if not m:
        continue
    written = float(m.group(1)) * UNIT[m.group(2)] / 2**20
    kind = ("disturbed" if "disturbed: " in line else "slower (changed or not confirmed yet)" if " slower" in line
            else "faster" if "faster than baseline" in line or " faster ×" in line else "no change")
    kinds[kind].append((written, int(m.group(3))))
for kind, v in kinds.items():
    if v:
        mib, busy = sorted(x[0] for x in v), sorted(x[1] for x in v)
        print(f"before the window, {kind} intervals: n {len(v)}, written median {mib[len(v) // 2]:.1f} MiB "
              f"(max {mib[-1]:.1f}), busy median {busy[len(v) // 2]}% (max {busy[-1]}%), "
              f"with any write {sum(1 for x in v if x[0] > 0)}")
EOF
  python3 - "$out/state.json" "$ticks_before" "$ticks_after" "$t0" "$t1" <<'EOF'
import json, sys
state = json.load(open(sys.argv[1]))
t = state["totals"]
busy_all = (int(sys.argv[3]) - int(sys.argv[2])) / 1000
wall = float(sys.argv[5]) - float(sys.argv[4])
print(f"wall: {wall:.0f} s; watch measuring: {t['measure_secs']:.1f} s = {t['measure_secs'] / t['wall_secs']:.2%} of its {t['wall_secs']:.0f} s")
if t["device_wall_secs"] > 0:
    print(f"device busy inside watch's measuring windows (io_ticks): {t['device_busy_secs']:.1f} s = {t['device_busy_secs'] / t['device_wall_secs']:.2%} of wall time")
print(f"device busy over the whole run, everyone's I/O (io_ticks): {busy_all:.1f} s = {busy_all / wall:.2%} of wall time")
EOF
  echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$out/summary.txt"
