#!/usr/bin/env bash
# Crash-and-recover cycles per minute of `syncbench crashtest`, per mode, at TPC-B scale 1.
#
#   bench/crashtest.sh            (no root, no disk: everything runs on the simulated file system)
#
# Environment: BIN (default target/release/syncbench), POINTS (2000), SEED (1), MODES ("wal fpw dw"),
# OUT (bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/syncbench}
POINTS=${POINTS:-2000}
SEED=${SEED:-1}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
[ -x "$BIN" ] || cargo build --release -p syncbench

echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in ${MODES:-wal fpw dw}; do
    for profile in strict ext4; do
        for errors in "" "--fsync-errors"; do
            name="crashtest-$mode-$profile${errors:+-fsync-errors}"
            # shellcheck disable=SC2086 # $errors is one optional flag
            /usr/bin/time -f "$name: %U s user, %e s wall" "$BIN" crashtest --mode "$mode" --profile "$profile" \
                --points "$POINTS" --seed "$SEED" $errors --json "$OUT/$name.json"
            python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['crashtest']; \
print(f\"  {c['points']} points, {c['cycles_per_min']:.0f} cycles/min wall, {c['acks_per_run']} acks/run\")" \
                "$OUT/$name.json"
        done
    done
done
[[ " ${MODES:-wal fpw dw} " == *" fpw "* ]] || exit 0
echo "== TPC-B proper (100,000 accounts per branch), fpw, 100 points"
/usr/bin/time -f "crashtest-fpw-100k: %U s user, %e s wall" "$BIN" crashtest --mode fpw --accounts 100000 \
    --points 100 --seed "$SEED" --json "$OUT/crashtest-fpw-100k.json"
