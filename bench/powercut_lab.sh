#!/usr/bin/env bash
# syncbench powercut on lab disks, issue 18's acceptance grid (root only): one `powercut lab` per profile
# (so a partial grid still leaves its results), each over FSES and METHODS with CUTS cuts per cell.
#  - honest profiles (hdd-7200, ssd-200us, nvme-plp, raid-bbu) x ext4, xfs x fdatasync, fsync, open_datasync:
#    0 acknowledged records lost expected;
#  - cheating-ssd, same methods: loss expected in >= 90% of cuts;
#  - --method write on an honest disk: losses expected, labelled not durable.
# Usage: bench/powercut_lab.sh   env: CUTS (default 100), PROFILES, FSES (ext4,xfs), METHODS
#        (fdatasync,fsync,open_datasync), WRITE_PROFILE (hdd-7200: the extra `write` cell), SEED (1),
#        OUT (bench/results/powercut-<date>), BIN (target/release/syncbench, built if missing).
#        Several runs may share one OUT (e.g. one per missing cell group): files are named by profile, fs and
#        methods, and machine.txt and commands.txt are appended to.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/syncbench}
[[ -n "${BIN:-}" ]] || cargo build --release -q -p syncbench
out=${OUT:-bench/results/powercut-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$out"
cuts=${CUTS:-100}
fses=${FSES:-ext4,xfs}
methods=${METHODS:-fdatasync,fsync,open_datasync}
seed=${SEED:-1}
read -r -a profiles <<< "${PROFILES-hdd-7200 ssd-200us nvme-plp raid-bbu cheating-ssd}"  # set but empty: none
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r); load at start: $(cut -d' ' -f1-3 /proc/loadavg) (shared with other builds)"
    echo "cuts per cell $cuts, fs $fses, methods $methods, seed $seed, binary $bin ($(git rev-parse --short HEAD))"
} | tee -a "$out/machine.txt"
run() {
    local name=$1; shift
    echo "== $name ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)): $bin powercut lab $*" | tee -a "$out/commands.txt"
    # Exit 1 means an unexpected loss: keep going, the table says which cell.
    "$bin" powercut lab "$@" --seed "$seed" --json "$out/$name.json" --markdown "$out/$name.md" \
        > "$out/$name.txt" 2> "$out/$name.log" || echo "exit $? for $name" | tee -a "$out/commands.txt"
    echo "   done $name ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$out/commands.txt"
    cat "$out/$name.txt"
}
for p in "${profiles[@]}"; do
    run "$p-${fses//,/+}-${methods//,/+}" --profile "$p" --fs "$fses" --cuts "$cuts" --method "$methods"
done
if [[ -n "${WRITE_PROFILE-hdd-7200}" ]]; then
    run "write-${WRITE_PROFILE:-hdd-7200}-${fses//,/+}" --profile "${WRITE_PROFILE:-hdd-7200}" --fs "$fses" --cuts "$cuts" --method write
fi
bench/powercut_summary.py "$out"/*.json > "$out/table.md"  # every cell in OUT, earlier runs into it included
