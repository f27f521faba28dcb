#!/usr/bin/env bash
# watch's resident memory and state file size over many intervals, accelerated (issue #35), as root:
#   bench/watch_memory.sh BIN OUT [INTERVALS] [EVERY] [DUTY]
# Runs `watch DIR --every EVERY --duty DUTY --intervals N` (defaults 2880, 5m, 1%: ten days of the systemd
# unit's setting) with SYNCBENCH_WATCH_NO_SLEEP=1 (no sleep between intervals; each interval measures
# exactly as it would in production) on a 256 MiB ext4 on a loop device whose image lives in /dev/shm (a real
# block device, so device accounting and the block tracepoints run every interval, without wearing the
# machine's disk). Every 5 s: the intervals done (from the state file), VmRSS and VmHWM of the watch
# (/proc/PID/status) and the state file's size, into OUT/samples.tsv; a summary in OUT/summary.txt.
set -euo pipefail
usage="usage: bench/watch_memory.sh BIN OUT [INTERVALS] [EVERY] [DUTY]"
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || usage_error
bin=$1 out=$2 n=${3:-2880} every=${4:-5m} duty=${5:-1%}
[ -x "$bin" ] || usage_error "; $bin is not an executable"
mkdir -p "$out"
exit_on_signals
work=$(mktemp -d /dev/shm/syncbench-watch-memory.XXXXXX)
loop= watch_pid=
cleanup() {
  [ -n "$watch_pid" ] && kill -TERM "$watch_pid" 2>/dev/null && wait "$watch_pid" 2>/dev/null || true
  mountpoint -q "$work/mnt" && umount "$work/mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work"
}
trap cleanup EXIT
truncate -s 256M "$work/image"
loop=$(losetup --find --show "$work/image")
# No lazy inode table init: its background writes would be the only other I/O, and not watch's.
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$loop"
mkdir "$work/mnt"
mount "$loop" "$work/mnt"
echo "bin: $bin ($("$bin" --version)) intervals: $n every: $every duty: $duty dir: ext4 on $loop (image in /dev/shm) load: $(cut -d' ' -f1-3 /proc/loadavg) date: $(date -u +%FT%TZ)" | tee "$out/summary.txt"
SYNCBENCH_WATCH_NO_SLEEP=1 "$bin" watch "$work/mnt" --every "$every" --duty "$duty" --intervals "$n" \
  --state "$out/state.json" --openmetrics "$out/syncbench.prom" > "$out/watch.log" 2> "$out/watch.err" &
watch_pid=$!
printf 'utc\telapsed_s\tintervals\tvm_rss_kib\tvm_hwm_kib\tstate_bytes\tload1\n' > "$out/samples.tsv"
start=$(date +%s)
while kill -0 "$watch_pid" 2>/dev/null; do
  status=$(cat "/proc/$watch_pid/status" 2>/dev/null) || break
  rss=$(awk '/^VmRSS:/ {print $2}' <<< "$status")
  hwm=$(awk '/^VmHWM:/ {print $2}' <<< "$status")
  done_n=$(grep -o '"intervals":[0-9]*' "$out/state.json" 2>/dev/null | cut -d: -f2 || true)
  size=$(stat -c %s "$out/state.json" 2>/dev/null || echo 0)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" $(($(date +%s) - start)) "${done_n:-0}" "$rss" "$hwm" \
    "$size" "$(cut -d' ' -f1 /proc/loadavg)" >> "$out/samples.tsv"
  sleep 5
done
wait "$watch_pid" || echo "watch exited with $?" | tee -a "$out/summary.txt"
watch_pid=
python3 - "$out/samples.tsv" <<'EOF' | tee -a "$out/summary.txt"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if int(r["intervals"]) > 0]
if not rows:
    sys.exit("no samples")
# VmRSS swings within an interval (the block tracepoints' rings are mapped per measured round, then
# freed), so a point sample says where in an interval it fell; the largest per tenth of the run is what
# would grow if memory leaked.
last = int(rows[-1]["intervals"])
print(f"samples: {len(rows)}; intervals: {rows[0]['intervals']} .. {last} in {rows[-1]['elapsed_s']} s")
for tenth in range(10):
    lo, hi = last * tenth // 10, last * (tenth + 1) // 10
    part = [r for r in rows if lo < int(r["intervals"]) <= hi]
    if part:
        rss = max(int(r["vm_rss_kib"]) for r in part) / 1024
        size = max(int(r["state_bytes"]) for r in part)
        print(f"  intervals {lo + 1:>5}-{hi:<5}: largest VmRSS {rss:.1f} MiB, state file at most {size} B ({len(part)} samples)")
print(f"VmHWM at the end: {int(rows[-1]['vm_hwm_kib']) / 1024:.1f} MiB")
EOF
