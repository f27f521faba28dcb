#!/usr/bin/env bash
# Overhead of syncbench's timing loop (issue #2 benchmark): syncbench's `write` case (one 8 KiB pwrite per
# commit, sequential through a 16 MiB file) against bench/run_write_loop.c doing the same on tmpfs, run
# alternately. Target: syncbench reaches >= 0.97 of the C loop's ops/s. Needs root (mounts a tmpfs) and cc.
# Usage: bench/run_overhead.sh            env: ROUNDS (default 7), SECS per run (default 2), BIN (a built syncbench)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-7}
secs=${SECS:-2}
# BIN=path measures that binary instead of building this checkout (to compare two builds, alternately).
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p syncbench
fi
bin=${BIN:-$PWD/target/release/syncbench}
work=$(mktemp -d)
mnt=$work/mnt
mkdir "$mnt"
mount -t tmpfs -o size=256m tmpfs "$mnt"
trap 'umount "$mnt"; rm -rf "$work"' EXIT
cc -O2 -o "$work/cloop" bench/run_write_loop.c
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
echo "Wall-clock ops/s (the target), and CPU time per write (user+sys of the whole process / writes, less"
echo "sensitive to other jobs on the machine; both processes also pay for their 16 MiB preparation)."
echo "round  c_loop_ops_per_s  syncbench_ops_per_s  ratio  c_cpu_ns_per_op  syncbench_cpu_ns_per_op  cpu_ratio"
ratios=()
cpu_ratios=()
for i in $(seq "$rounds"); do
  # Both at the same real-time priority (SCHED_FIFO 50): other jobs share the cores, and without it the
  # noise between two runs of the same C loop was ±50%. syncbench stops when its mean is known to
  # ±2% (or after SECS); the C loop then runs exactly as long as syncbench's timed loop did.
  read -r s d n < <(chrt -f 50 /usr/bin/time -f "%U %S" -o "$work/sb.time" \
    "$bin" run --sections e --methods write --secs "$secs" --json - "$mnt" 2>/dev/null |
    python3 -c 'import json,sys; r = json.load(sys.stdin)["results"][0]
print(r["ops_per_s"], r["duration_s"], r["ops"] + r["warmup_ops"])')
  read -r c cn < <(chrt -f 50 /usr/bin/time -f "%U %S" -o "$work/c.time" "$work/cloop" "$mnt/.syncbench-cloop" "$d")
  read -r r sb_cpu c_cpu cr < <(python3 -c "
sb = sum(map(float, open('$work/sb.time').read().split())) / $n * 1e9
c = sum(map(float, open('$work/c.time').read().split())) / $cn * 1e9
print(f'{$s/$c:.3f} {sb:.0f} {c:.0f} {c/sb:.3f}')")
  ratios+=("$r")
  cpu_ratios+=("$cr")
  printf "%5d  %16.0f  %19.0f  %5s  %15s  %23s  %9s\n" "$i" "$c" "$s" "$r" "$c_cpu" "$sb_cpu" "$cr"
done
median() { printf "%s\n" "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median ratio (ops/s): $(median "${ratios[@]}")   median cpu_ratio: $(median "${cpu_ratios[@]}")"
