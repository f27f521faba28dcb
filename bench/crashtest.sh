#!/usr/bin/env bash
# Crash-and-recover cycles per minute of `syncbench crashtest`, per mode, at TPC-B scale 1: every
# configuration (mode × profile × fsync errors) once per round, the modes alternating inside each round,
# several rounds; prints the median and range per configuration.
#
#   bench/crashtest.sh            (no root, no disk: everything runs on the simulated file system)
#
# Environment: BIN (default target/release/syncbench), POINTS (1000), SEED (1), ROUNDS (3),
# MODES ("wal fpw dw atomic"), GENERATIONS (3), OUT (bench/results/crashtest-DATE).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/syncbench}
POINTS=${POINTS:-1000}
SEED=${SEED:-1}
ROUNDS=${ROUNDS:-3}
GENERATIONS=${GENERATIONS:-3}
OUT=${OUT:-bench/results/crashtest-$(date -u +%F)}
mkdir -p "$OUT"
[ -x "$BIN" ] || cargo build --release -p syncbench

echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $POINTS points × $GENERATIONS generations"
for round in $(seq 1 "$ROUNDS"); do
    for profile in strict ext4; do
        for errors in "" "--fsync-errors"; do
            for mode in ${MODES:-wal fpw dw atomic}; do
                name="$mode-$profile${errors:+-fsync-errors}"
                # shellcheck disable=SC2086 # $errors is one optional flag
                "$BIN" crashtest --mode "$mode" --profile "$profile" --points "$POINTS" --seed "$SEED" \
                    --generations "$GENERATIONS" $errors --json "$OUT/$name-round$round.json" >/dev/null
            done
        done
    done
done
python3 - "$OUT" <<'EOF'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(out, "*-round*.json"))):
    c = json.load(open(path))["crashtest"]
    name = re.sub(r"-round\d+\.json$", "", os.path.basename(path))
    runs.setdefault(name, []).append(c)
print(f"{'configuration':32} {'cycles/min median':>18} {'range':>20}  passed  coverage (first round)")
for name, cs in sorted(runs.items()):
    rates = [c["cycles_per_min"] for c in cs]
    cov = cs[0]["coverage"]
    keys = ["commits_overlapping_flush", "eviction_writes", "dw_restored_pages", "torn_tails_zeroed",
            "process_crashes", "media_damage_reported"]
    print(f"{name:32} {statistics.median(rates):18.0f} {min(rates):9.0f}–{max(rates):<10.0f} "
          f"{all(c['passed'] for c in cs)!s:6}  " + ", ".join(f"{k}={cov[k]}" for k in keys))
EOF
