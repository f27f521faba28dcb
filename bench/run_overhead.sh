#!/usr/bin/env bash
# Overhead of syncbench's timing loop (issue #2 benchmark): syncbench's `write` case (one 8 KiB pwrite per
# commit, sequential through a 16 MiB file) against bench/run_write_loop.c doing the same on tmpfs, run
# alternately. Target: syncbench reaches >= 0.97 of the C loop's ops/s. Needs root (mounts a tmpfs) and cc.
# Usage: bench/run_overhead.sh            env: ROUNDS (default 7), SECS per run (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-7}
secs=${SECS:-2}
cargo build --release -q -p syncbench
bin=$PWD/target/release/syncbench
work=$(mktemp -d)
mnt=$work/mnt
mkdir "$mnt"
mount -t tmpfs -o size=256m tmpfs "$mnt"
trap 'umount "$mnt"; rm -rf "$work"' EXIT
cc -O2 -o "$work/cloop" bench/run_write_loop.c
echo "round  c_loop_ops_per_s  syncbench_ops_per_s  ratio"
ratios=()
for i in $(seq "$rounds"); do
  # Both at the same raised priority (other jobs share the cores). syncbench stops when its mean is known to
  # ±2% (or after SECS); the C loop then runs exactly as long as syncbench's timed loop did.
  read -r s d < <(nice -n -10 "$bin" run --sections e --methods write --secs "$secs" --json - "$mnt" 2>/dev/null |
    python3 -c 'import json,sys; r = json.load(sys.stdin)["results"][0]; print(r["ops_per_s"], r["duration_s"])')
  c=$(nice -n -10 "$work/cloop" "$mnt/.syncbench-cloop" "$d")
  r=$(python3 -c "print(f'{$s/$c:.3f}')")
  ratios+=("$r")
  printf "%5d  %16.0f  %19.0f  %s  (%.2f s each)\n" "$i" "$c" "$s" "$r" "$d"
done
printf "%s\n" "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print "median ratio: " a[int((NR+1)/2)]}'
