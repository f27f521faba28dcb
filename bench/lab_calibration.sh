#!/usr/bin/env bash
# Does each lab profile measure its own cost plus the stack's (issue #36: hdd-7200 within 10%, nvme-plp within
# 1.5x)? Binaries alternate (BINS), profiles rotate inside each round, the order changing between rounds.
# Per lab: `run --quick --secs RUN_SECS --methods fdatasync` (the 8 KiB overwrite of `one_write` is the
# number) and `lab stats` (the model's charge per write and flush, and how late the server's replies went
# out); on hdd-7200 also `commit --clients 1,16 --commit-delay-us 0` (group commit must not regress).
# Usage: bench/lab_calibration.sh   env: BINS ("before=/path after=/path"), ROUNDS (3), RUN_SECS (1),
#        COMMIT_SECS (2), PROFILES ("zero nvme-plp ssd-200us hdd-7200"), OUT (bench/results/lab-<date>/calibration).
# Writes OUT/run_<bin>_<profile>_<round>.json, stats_…, commit_… and OUT/summary.md
# (bench/lab_calibration_summary.py).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results/lab-$(date -u +%F)/calibration}
mkdir -p "$out"
rounds=${ROUNDS:-3}
read -r -a bins <<<"${BINS:?BINS=\"before=/path/a after=/path/b\"}"
read -r -a profiles <<<"${PROFILES:-zero nvme-plp ssd-200us hdd-7200}"
runs=()
for p in "${profiles[@]}"; do for b in "${bins[@]}"; do runs+=("$b|$p"); done; done
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r), /tmp on $(findmnt -no FSTYPE,SOURCE --target /tmp | tr -s ' ')"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "rounds $rounds, run secs ${RUN_SECS:-1}, commit secs ${COMMIT_SECS:-2}, binaries ${BINS} ($(git rev-parse --short HEAD))"
} | tee "$out/machine.txt"
for round in $(seq 1 "$rounds"); do
    n=${#runs[@]}
    for k in $(seq 0 $((n - 1))); do
        run=${runs[$(((k + round) % n))]}
        b=${run%%|*} p=${run#*|}
        name=${b%%=*} bin=${b#*=}
        tag="${name}_${p}_$round"
        echo "round $round: $name on $p (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$out/machine.txt"
        commit=""
        [[ $p != hdd-7200 ]] || commit="'$bin' commit \"\$SYNCBENCH_LAB_MOUNT\" --clients 1,16 --commit-delay-us 0 \
            --secs ${COMMIT_SECS:-2} --json '$out/commit_$tag.json' >/dev/null &&"
        "$bin" lab run --profile "$p" --fs ext4 --size 1GiB -- sh -c "
            '$bin' run \"\$SYNCBENCH_LAB_MOUNT\" --quick --secs ${RUN_SECS:-1} --methods fdatasync \
                --json '$out/run_$tag.json' >/dev/null && $commit
            '$bin' lab stats \"\$SYNCBENCH_LAB_MOUNT\" --json '$out/stats_$tag.json' >/dev/null"
    done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)" | tee -a "$out/machine.txt"
python3 bench/lab_calibration_summary.py "$out" | tee "$out/summary.md"
