#!/usr/bin/env bash
# syncbench lab, issue 17's ground truth on emulated disks (root only):
#  - `syncbench run --quick --secs RUN_SECS --methods fdatasync` (1 s per case: --quick's 0.1 s is 6 flushes on
#    hdd-7200, too few for a median) on zero, ssd-200us and hdd-7200: 8 KiB fdatasync commit
#    latency vs the profile's flush cost plus the stack's own cost (measured on zero);
#  - `syncbench commit --clients 1,4,16,64` on the same three: the group-commit goal (16 clients >= 8x one
#    client on ssd-200us, >= 12x on hdd-7200);
#  - the same `run` on the host file system holding the image: the stack's overhead on zero.
# Profiles alternate inside each round, the order rotating between rounds. Raw JSON goes to OUT.
# Usage: bench/lab_bench.sh   env: ROUNDS (default 3), SECS per commit point (2), RUN_SECS (1), FS (ext4), OUT
#        (bench/results/lab-<date>), BIN (target/release/syncbench, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/syncbench}
[[ -n "${BIN:-}" ]] || cargo build --release -q -p syncbench
out=${OUT:-bench/results/lab-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$out"
rounds=${ROUNDS:-3}
secs=${SECS:-2}
fs=${FS:-ext4}
host_dir=$(mktemp -d /var/tmp/.syncbench-lab-bench-XXXXXX)
trap 'rm -rf "$host_dir"' EXIT
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r), host fs $(findmnt -no FSTYPE --target /var/tmp) on $(findmnt -no SOURCE --target /var/tmp)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg) (other engineers' builds share the machine)"
    echo "rounds $rounds, commit secs $secs, lab fs $fs, binary $bin ($(git rev-parse --short HEAD))"
} | tee "$out/machine.txt"
profiles=(zero ssd-200us hdd-7200)
for round in $(seq 1 "$rounds"); do
    n=${#profiles[@]}
    for k in $(seq 0 $((n - 1))); do
        p=${profiles[$(((k + round) % n))]}
        echo "round $round: $p (load $(cut -d' ' -f1 /proc/loadavg))"
        "$bin" lab run --profile "$p" --fs "$fs" --size 2GiB -- sh -c "
            '$bin' run \"\$SYNCBENCH_LAB_MOUNT\" --quick --secs ${RUN_SECS:-1} --methods fdatasync --json '$out/run_${p}_$round.json' >/dev/null &&
            '$bin' commit \"\$SYNCBENCH_LAB_MOUNT\" --clients 1,4,16,64 --secs $secs --json '$out/commit_${p}_$round.json' >/dev/null &&
            '$bin' lab stats \"\$SYNCBENCH_LAB_MOUNT\" --json '$out/stats_${p}_$round.json'"
    done
    echo "round $round: host $host_dir"
    "$bin" run "$host_dir" --quick --secs "${RUN_SECS:-1}" --methods fdatasync --json "$out/run_host_$round.json" >/dev/null
done
python3 bench/lab_summary.py "$out" | tee "$out/summary.md"
