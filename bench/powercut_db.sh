#!/usr/bin/env bash
# syncbench powercut db, issue 34's SQLite grid (root only): one `powercut db` per settings (so a partial grid
# still leaves its results), each over PROFILES x FSES with CUTS cuts per cell.
#  - safe settings: journal_mode=WAL,synchronous=FULL and journal_mode=DELETE,synchronous=FULL on hdd-7200,
#    nvme-consumer, nvme-plp x ext4, xfs: 0 acknowledged transfers lost, 0 failed recoveries, 0 integrity
#    failures expected;
#  - journal_mode=DELETE,synchronous=EXTRA on the same grid (ONLY=extra; not in the default set): SQLite's
#    documented fix for DELETE mode's last commit (the journal's unlink made durable by a directory sync);
#  - negative controls on NEG_PROFILE (hdd-7200) ext4: WAL+NORMAL and synchronous=OFF (loss expected), and
#    cheating-ssd ext4 with both safe settings (loss or damage expected in most cuts).
# Usage: bench/powercut_db.sh   env: CUTS (default 25), PROFILES ("hdd-7200,nvme-consumer,nvme-plp"), FSES
#        (ext4,xfs), NEG_PROFILE (hdd-7200), NEG_CUTS (CUTS), SEED (1), CLIENTS (8),
#        OUT (bench/results/powercut-db-<date>), BIN (target/release/syncbench, built if missing),
#        ONLY (a space-separated subset of: safe extra negative cheating; default: safe negative cheating).
# Then bench/powercut_db_summary.py OUT/*.json prints every cell and the totals (OUT/table.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/syncbench}
[[ -n "${BIN:-}" ]] || cargo build --release -q -p syncbench
out=${OUT:-bench/results/powercut-db-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$out"
cuts=${CUTS:-25}
neg_cuts=${NEG_CUTS:-$cuts}
profiles=${PROFILES:-hdd-7200,nvme-consumer,nvme-plp}
fses=${FSES:-ext4,xfs}
neg=${NEG_PROFILE:-hdd-7200}
seed=${SEED:-1}
clients=${CLIENTS:-8}
only=" ${ONLY:-safe negative cheating} "
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r); load at start: $(cut -d' ' -f1-3 /proc/loadavg) (shared with other builds)"
    echo "sqlite: $(sqlite3 --version | cut -d' ' -f1); cuts per cell $cuts (negative controls $neg_cuts), clients $clients, seed $seed, binary $bin ($(git rev-parse --short HEAD))"
} | tee -a "$out/machine.txt"
run() {
    local name=$1; shift
    echo "== $name ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)): $bin powercut db $*" | tee -a "$out/commands.txt"
    # Exit 1 means unexpected damage: keep going, the table says which cell.
    "$bin" powercut db --db sqlite "$@" --seed "$seed" --clients "$clients" --json "$out/$name.json" \
        --markdown "$out/$name.md" > "$out/$name.txt" 2> "$out/$name.log" || echo "exit $? for $name" | tee -a "$out/commands.txt"
    echo "   done $name ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$out/commands.txt"
    cat "$out/$name.txt"
}
if [[ $only == *" safe "* ]]; then
    run wal-full --set journal_mode=WAL,synchronous=FULL --profile "$profiles" --fs "$fses" --cuts "$cuts"
    run delete-full --set journal_mode=DELETE,synchronous=FULL --profile "$profiles" --fs "$fses" --cuts "$cuts"
fi
if [[ $only == *" extra "* ]]; then
    run delete-extra --set journal_mode=DELETE,synchronous=EXTRA --profile "$profiles" --fs "$fses" --cuts "$cuts"
fi
if [[ $only == *" negative "* ]]; then
    run wal-normal --set journal_mode=WAL,synchronous=NORMAL --profile "$neg" --fs ext4 --cuts "$neg_cuts"
    run sync-off --set journal_mode=DELETE,synchronous=OFF --profile "$neg" --fs ext4 --cuts "$neg_cuts"
fi
if [[ $only == *" cheating "* ]]; then
    run cheating-wal-full --set journal_mode=WAL,synchronous=FULL --profile cheating-ssd --fs ext4 --cuts "$neg_cuts"
    run cheating-delete-full --set journal_mode=DELETE,synchronous=FULL --profile cheating-ssd --fs ext4 --cuts "$neg_cuts"
fi
bench/powercut_db_summary.py "$out"/*.json > "$out/table.md"
cat "$out/table.md"
