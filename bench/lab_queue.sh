#!/usr/bin/env bash
# The queue the device model sees (issue #36 part 3): `syncbench commit --clients 16` on lab ssd-200us
# (ext4), then `lab stats`: per flush, the most requests in flight at once while it ran (median, p90, max
# over the lab's flushes, mkfs's few included). Variants as in bench/lab_stack_cost.sh, alternating, the
# order rotating between rounds. Raw JSON goes to OUT.
# WORKLOAD=writers replaces `commit` by CLIENTS independent writers, each overwriting 8 KiB of its own
# file with O_DIRECT + fdatasync (dd) 60 times: requests that could overlap a flush if the stack lets them.
# Usage: bench/lab_queue.sh   env: ROUNDS (3), SECS per commit point (3), CLIENTS (16), PROFILE (ssd-200us),
#        VARIANTS (base dio dio+thr4), OUT (bench/results/lab-<date>/queue-<time>), BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/syncbench}
[[ -n "${BIN:-}" ]] || cargo build --release -q -p syncbench
out=${OUT:-bench/results/lab-$(date -u +%F)/queue-$(date -u +%H%M)}
mkdir -p "$out"
rounds=${ROUNDS:-3}
profile=${PROFILE:-ssd-200us}
read -r -a variants <<<"${VARIANTS:-base dio dio+thr4}"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg) (other engineers' builds share the machine)"
    echo "workload ${WORKLOAD:-commit}, rounds $rounds, profile $profile, clients ${CLIENTS:-16}, secs ${SECS:-3}, binary $bin ($(git rev-parse --short HEAD))"
} | tee "$out/machine.txt"
tuning() {
    case $1 in
        base) echo "off 1" ;;
        dio) echo "on 1" ;;
        thr4) echo "off 4" ;;
        dio+thr4) echo "on 4" ;;
        *) echo "unknown variant $1" >&2; exit 2 ;;
    esac
}
for round in $(seq 1 "$rounds"); do
    n=${#variants[@]}
    for k in $(seq 0 $((n - 1))); do
        v=${variants[$(((k + round) % n))]}
        read -r dio threads <<<"$(tuning "$v")"
        echo "round $round: $v (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$out/machine.txt"
        if [[ ${WORKLOAD:-commit} == writers ]]; then
            work="M=\$SYNCBENCH_LAB_MOUNT; for i in \$(seq 1 ${CLIENTS:-16}); do dd if=/dev/zero of=\$M/f\$i bs=64k count=16 2>/dev/null; done; sync
                for i in \$(seq 1 ${CLIENTS:-16}); do (for j in \$(seq 1 60); do dd if=/dev/zero of=\$M/f\$i bs=8k count=1 \
                    seek=\$((j % 100)) conv=notrunc,fdatasync oflag=direct 2>/dev/null; done) & done; wait"
        else
            work="'$bin' commit \"\$SYNCBENCH_LAB_MOUNT\" --clients ${CLIENTS:-16} --secs ${SECS:-3} --commit-delay-us 0 \
                --json '$out/commit_${v}_$round.json' >/dev/null"
        fi
        SYNCBENCH_LAB_LOOP_DIO=$dio SYNCBENCH_LAB_FUSE_THREADS=$threads \
            "$bin" lab run --profile "$profile" --fs ext4 --size 1GiB -- sh -c "$work &&
            '$bin' lab stats \"\$SYNCBENCH_LAB_MOUNT\" --json '$out/stats_${v}_$round.json'"
    done
done
python3 - "$out" <<'PY' | tee "$out/summary.md"
import glob, json, os, statistics, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "stats_*.json"))):
    v = os.path.basename(path)[len("stats_"):].rsplit("_", 1)[0]
    q = json.load(open(path))["device"]["queue_depth_during_flush"]
    rows.setdefault(v, []).append((q["p50"], q["p90"], q["max"], q["flushes"]))
print("| variant | rounds | in flight while a flush ran: median of per-flush peaks (range) | p90 (range) | max (range) |")
print("|---|---:|---:|---:|---:|")
for v, r in rows.items():
    cell = lambda i: f"{statistics.median([x[i] for x in r]):g} ({min(x[i] for x in r)}–{max(x[i] for x in r)})"
    print(f"| {v} | {len(r)} | {cell(0)} | {cell(1)} | {cell(2)} |")
PY
