#!/usr/bin/env bash
# How hard `powercut write` drives a disk, against `syncbench run` on the same lab disk with the same method
# and 4 KiB writes. Per round, on one lab disk per profile (their order rotating between rounds), run and
# the writer alternate: run, write, run, write, …, run (PAIRS writes), so every writer's window is
# bracketed by two runs that saw the same load; the summary compares each writer with the mean of its two.
#   run: one_write (sequential overwrites of a prepared file: the issue's "run's rate") and file_state
#        (overwrite of a zero-filled file, append that grows a file, fallocate'd file).
#   powercut write: records/s over everything it does (per 8 rounds: 8 overwrites, 8 appends that grow a
#        file, 1 new file with a directory fsync) and each kind's rate while it was being written.
# Then bench/powercut_throughput_summary.py OUT prints the medians, ranges and ratios (OUT/table.md).
# Usage: bench/powercut_throughput.sh  env: ROUNDS (5), PAIRS (1), SECS (3: run's per-case budget and the
# writer's duration), METHOD (fdatasync or fsync: file_state has only those), PROFILES ("ssd-200us nvme-plp
# hdd-7200 raid-bbu"), FS (ext4), OUT, BIN (target/release/syncbench, built if missing). Root (lab disks).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/syncbench}
[[ -n "${BIN:-}" ]] || cargo build --release -q -p syncbench
bin=$(realpath "$bin")
out=$(realpath -m "${OUT:-bench/results/powercut-throughput-$(date -u +%Y%m%d-%H%M)}")
mkdir -p "$out"
rounds=${ROUNDS:-5}; pairs=${PAIRS:-1}; secs=${SECS:-3}; method=${METHOD:-fdatasync}; fs=${FS:-ext4}
read -r -a profiles <<< "${PROFILES:-ssd-200us nvme-plp hdd-7200 raid-bbu}"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "rounds $rounds, pairs $pairs, secs $secs, method $method, fs $fs, binary $bin"
} | tee "$out/machine.txt"
for round in $(seq 1 "$rounds"); do
    n=${#profiles[@]}
    for i in $(seq 0 $((n - 1))); do
        p=${profiles[$(((i + round - 1) % n))]}
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        # shellcheck disable=SC2016 # expanded by the inner shell, where lab run sets SYNCBENCH_LAB_MOUNT
        "$bin" lab run --profile "$p" --fs "$fs" -- sh -c '
            m=$SYNCBENCH_LAB_MOUNT
            run() { "$0" run "$m" --secs "$1" --methods "$2" --sections one_write,file_state --size 4k --json "$3-run-$4.json" >/dev/null; }
            run "$1" "$2" "$3" 0
            for k in $(seq 1 "$4"); do
                "$0" powercut write "$m" --secs "$1" --method "$2" 2>"$3-write-$k.txt" >/dev/null
                run "$1" "$2" "$3" "$k"
            done
        ' "$bin" "$secs" "$method" "$out/$p-r$round" "$pairs"
        echo "$load" > "$out/$p-r$round-load.txt"
        for k in $(seq 1 "$pairs"); do
            echo "$p round $round write $k (load at the round's start $load): $(grep -o 'acknowledged in.*' "$out/$p-r$round-write-$k.txt")" | tee -a "$out/summary.txt"
        done
    done
done
bench/powercut_throughput_summary.py "$out" | tee "$out/table.md"
