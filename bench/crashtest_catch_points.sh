#!/usr/bin/env bash
# Where each deliberate engine bug is caught: the first failing crash point of `--seed $SEED` (up to
# 2,000 points, three generations each) for every mode and profile it applies to.
#
#   bench/crashtest_catch_points.sh > bench/results/crashtest-DATE-catch-points.txt
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/syncbench}
SEED=${SEED:-3}
[ -x "$BIN" ] || cargo build --release -p syncbench
echo "# $BIN crashtest --seed $SEED --points 2000 --engine-bug BUG (first failing point; '-' = not caught)"
catch() { # mode profile bug [flags]
    local out
    out=$("$BIN" crashtest --mode "$1" --profile "$2" --seed "$SEED" --points 2000 --engine-bug "$3" "${@:4}" 2>&1 >/dev/null || true)
    local point
    point=$(sed -nE '0,/.*check failed: crash point ([0-9]+) .*/s//\1/p' <<<"$out" || true)
    printf '%-32s %-7s %-7s %s\n' "$3 ${*:4}" "$1" "$2" "${point:--}${out:+  # ${out:0:160}}"
}
for bug in ${BUGS:-skip-log-sync skip-dir-fsync ack-when-written flush-horizon-appended keep-stale-tail \
    trust-unsynced-at-open corruption-as-end}; do
    for mode in wal fpw dw atomic; do
        for profile in strict ext4; do catch "$mode" "$profile" "$bug"; done
    done
done
[ -n "${LOG_BUGS_ONLY:-}" ] && exit 0
for mode in wal fpw dw atomic; do
    for profile in strict ext4; do catch "$mode" "$profile" retry-fsync --fsync-errors; done
done
for mode in fpw dw atomic; do
    for profile in strict ext4; do
        catch "$mode" "$profile" evict-skip-write-ahead
        catch "$mode" "$profile" redo-skips-first-record
    done
done
for profile in strict ext4; do
    catch dw "$profile" dw-skip-fsync
    catch dw "$profile" dw-reuse-slot-before-home-sync
    catch atomic "$profile" atomic-plain-write
done
