#!/usr/bin/env bash
# How hard `powercut write` drives a disk: its records/s against `syncbench run`'s commit rate for the same
# method and 4 KiB writes (section one_write, sequential overwrites in a preallocated file), on lab disks.
# In each round, on one lab disk per profile: run, then write, then run again, so both see the same load.
# `powercut write` mixes overwrites, appends (a growing file: fdatasync also commits the size) and a new
# file with a directory fsync every eighth round, so it is expected to be somewhat slower than run's pure
# overwrite. Usage: bench/powercut_throughput.sh  env: ROUNDS (3), SECS (3), METHOD (fdatasync),
# PROFILES ("ssd-200us nvme-plp hdd-7200"), FS (ext4), OUT, BIN (target/release/syncbench, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/syncbench}
[[ -n "${BIN:-}" ]] || cargo build --release -q -p syncbench
bin=$(realpath "$bin")
out=$(realpath -m "${OUT:-bench/results/powercut-throughput-$(date -u +%Y%m%d-%H%M)}")
mkdir -p "$out"
rounds=${ROUNDS:-3}; secs=${SECS:-3}; method=${METHOD:-fdatasync}; fs=${FS:-ext4}
read -r -a profiles <<< "${PROFILES:-ssd-200us nvme-plp hdd-7200}"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "rounds $rounds, secs $secs, method $method, fs $fs, binary $bin"
} | tee "$out/machine.txt"
for round in $(seq 1 "$rounds"); do
    for p in "${profiles[@]}"; do
        # shellcheck disable=SC2016 # expanded by the inner shell, where lab run sets SYNCBENCH_LAB_MOUNT
        "$bin" lab run --profile "$p" --fs "$fs" -- sh -c '
            m=$SYNCBENCH_LAB_MOUNT
            "$0" run "$m" --secs "$1" --methods "$2" --sections one_write --size 4k --json "$3-run-a.json" >/dev/null
            "$0" powercut write "$m" --secs "$1" --method "$2" 2>"$3-write.txt" >/dev/null
            "$0" run "$m" --secs "$1" --methods "$2" --sections one_write --size 4k --json "$3-run-b.json" >/dev/null
        ' "$bin" "$secs" "$method" "$out/$p-r$round"
        rate_a=$(jq -r '[.results[] | .ops_per_s] | max' "$out/$p-r$round-run-a.json")
        rate_b=$(jq -r '[.results[] | .ops_per_s] | max' "$out/$p-r$round-run-b.json")
        wrote=$(grep -o '([0-9]* records/s)' "$out/$p-r$round-write.txt" | tr -dc 0-9)
        echo "$p round $round: run $rate_a/s, powercut write $wrote records/s, run $rate_b/s" | tee -a "$out/summary.txt"
    done
done
