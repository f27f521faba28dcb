#!/usr/bin/env bash
# The lab stack's own cost with idle CPUs polling against halting (issue #36: `zero` ≤ 50 µs): the stack
# holds a PM QoS request of 0 µs CPU wake-up latency by default (SYNCBENCH_LAB_CPU_IDLE=poll), so an idle
# vCPU polls instead of halting; `default` leaves the machine's idle states alone. The two alternate within
# each round, the first of the pair swapping between rounds. Each run is one `syncbench lab run --profile
# PROFILE` measuring, on ext4, `run --sections a --rounds 3` with fdatasync (8 KiB buffered write +
# fdatasync: the issue's number), direct (one O_DIRECT write request) and fdatasync+direct (one write and one
# flush request). Needs root and an otherwise quiet machine (the point is what idle CPUs cost).
# Usage: bench/lab_cpu_idle.sh   env: ROUNDS (8), RUN_SECS per case (1), PROFILES (zero), OUT
#        (bench/results/lab-<date>/cpu-idle-<time>), BIN (target/release/syncbench, built if unset)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root: the lab needs loop devices and FUSE" >&2; exit 2; }
bin=${BIN:-target/release/syncbench}
[[ -n "${BIN:-}" ]] || cargo build --release -q -p syncbench
out=${OUT:-bench/results/lab-$(date -u +%F)/cpu-idle-$(date -u +%H%M)}
mkdir -p "$out"
read -r -a profiles <<<"${PROFILES:-zero}"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r), cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "rounds ${ROUNDS:-8}, run secs ${RUN_SECS:-1} per case, $bin ($(git rev-parse --short HEAD))"
} | tee "$out/machine.txt"
for round in $(seq 1 "${ROUNDS:-8}"); do
    if ((round % 2)); then order="poll default"; else order="default poll"; fi
    for p in "${profiles[@]}"; do
        for idle in $order; do
            tag=$idle; [[ $p == zero ]] || tag="$idle@$p"
            echo "round $round: $idle on $p (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$out/machine.txt"
            SYNCBENCH_LAB_CPU_IDLE=$idle "$bin" lab run --profile "$p" --fs ext4 --size 1GiB -- sh -c "
                '$bin' run \"\$SYNCBENCH_LAB_MOUNT\" --sections a --methods fdatasync,direct,fdatasync+direct \
                    --secs ${RUN_SECS:-1} --rounds 3 --json '$out/run_${tag}_$round.json' >/dev/null"
        done
    done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
python3 bench/lab_stack_cost_summary.py "$out" | tee "$out/summary.md"
