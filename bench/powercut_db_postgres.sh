#!/usr/bin/env bash
# `syncbench powercut db --db postgres` on lab disks: the safe settings on the honest profiles (each with
# ext4 and xfs), every wal_sync_method advise can pick (one fs), the negative controls
# (synchronous_commit=off, fsync=off, defaults on cheating-ssd). One JSON and one text file per run.
#
#   sudo bench/powercut_db_postgres.sh [safe|methods|controls|summary]...   (default: all; the
#   time breakdown of every JSON in OUT is printed at the end and kept in OUT/postgres-summary.txt)
#   A control alone: synchronous_commit-off, fsync-off or cheating-ssd. `safe` runs one campaign per
#   profile (postgres-safe-PROFILE, both fs), so a partial grid still leaves its results and two shells can
#   split the profiles (PROFILES=hdd-7200 in one, PROFILES=nvme-consumer,nvme-plp in the other).
#
# Environment: BIN (default target/release/syncbench), CUTS (25), SEED (1),
# OUT (bench/results/powercut-db-DATE), PROFILES (safe: hdd-7200,nvme-consumer,nvme-plp),
# METHOD_FSS (methods: ext4,xfs). Needs root, /dev/fuse, PostgreSQL (.ci/deps/powercut_db_postgres.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/syncbench}
CUTS=${CUTS:-25}
SEED=${SEED:-1}
OUT=${OUT:-bench/results/powercut-db-$(date -u +%F)}
PROFILES=${PROFILES:-hdd-7200,nvme-consumer,nvme-plp}
METHOD_FSS=${METHOD_FSS:-ext4,xfs}
mkdir -p "$OUT"
[ -x "$BIN" ] || cargo build --release -p syncbench

# summary: per cell, where the time went (load until the cut, server restart = crash recovery, the rest
# of each cut = cut, reboot, read-back, pg_amcheck; setup = initdb, start, fill), from every JSON in OUT.
summary() {
    python3 - "$OUT"/postgres-*.json <<'PY'
import json, statistics, sys
for path in sys.argv[1:]:
    for c in json.load(open(path))["cells"]:
        cuts = c["cuts"]
        if not cuts:
            continue
        load = sum(x["cut_after_ms"] for x in cuts) / 1000
        restart = sum(x["restart_ms"] for x in cuts) / 1000
        rest = sum(x["cut_ms"] for x in cuts) / 1000 - load - restart
        setup = c["elapsed_s"] - sum(x["cut_ms"] for x in cuts) / 1000
        r = [x["restart_ms"] for x in cuts]
        print(f"{c['settings']:24} {c['profile']:13} {c['fs']:4} {len(cuts)} cuts in {c['elapsed_s']:.0f} s "
              f"({60 * len(cuts) / c['elapsed_s']:.1f}/min): load {load:.0f} s, restart {restart:.0f} s "
              f"(median {statistics.median(r)} ms, {min(r)}-{max(r)}), cut+read+check {rest:.0f} s, setup {setup:.0f} s")
PY
}

# run NAME ARGS...: one campaign; its table and per-cut lines in NAME.txt, every cut in NAME.json.
run() {
    local name=$1
    shift
    echo "== $name: powercut db --db postgres $* --cuts $CUTS --seed $SEED" | tee "$OUT/postgres-$name.txt"
    local start=$SECONDS rc=0
    "$BIN" powercut db --db postgres "$@" --cuts "$CUTS" --seed "$SEED" --json "$OUT/postgres-$name.json" \
        >>"$OUT/postgres-$name.txt" 2>&1 || rc=$?
    echo "exit $rc after $((SECONDS - start)) s" | tee -a "$OUT/postgres-$name.txt"
    grep -E '^(version|PostgreSQL)' "$OUT/postgres-$name.txt" || true
}

# control NAME: one negative control (each expected to lose), 25 cuts on one profile.
control() {
    case $1 in
    synchronous_commit-off) run synchronous_commit-off --set synchronous_commit=off --profile nvme-consumer --fs ext4 ;;
    fsync-off) run fsync-off --set fsync=off --profile nvme-consumer --fs ext4 ;;
    cheating-ssd) run cheating-ssd --profile cheating-ssd --fs ext4 ;;
    esac
}

echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $("$BIN" --version)"
for part in "${@:-safe methods controls}"; do
    for p in $part; do
        case $p in
        safe)
            for profile in ${PROFILES//,/ }; do
                run "safe-$profile" --profile "$profile" --fs ext4,xfs
            done
            ;;
        methods)
            for fs in ${METHOD_FSS//,/ }; do
                for m in fdatasync open_datasync fsync open_sync; do
                    run "wal_sync_method-$m-$fs" --set "wal_sync_method=$m" --profile nvme-consumer --fs "$fs"
                done
            done
            ;;
        controls) for c in synchronous_commit-off fsync-off cheating-ssd; do control "$c"; done ;;
        synchronous_commit-off | fsync-off | cheating-ssd) control "$p" ;;
        summary) ;;
        *) echo "unknown part $p (safe, methods, controls, synchronous_commit-off, fsync-off, cheating-ssd, summary)" >&2; exit 2 ;;
        esac
    done
done
summary | tee "$OUT/postgres-summary.txt"
