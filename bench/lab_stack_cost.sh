#!/usr/bin/env bash
# The lab stack's own cost (issue #36 part 3): 8 KiB commits on the `zero` profile (no modelled latency),
# under each way of running the stack above the model, alternating:
#   base     loop device buffered, 1 FUSE thread (the stack before #36)
#   dio      loop device with direct I/O (losetup --direct-io=on), 1 FUSE thread
#   thr4     loop buffered, 4 FUSE threads (cloned /dev/fuse descriptors)
#   dio+thr4 both
# Each variant is one `syncbench lab run --profile zero` measuring, on ext4, `run --sections a` with
#   fdatasync         8 KiB buffered write + fdatasync (the issue's number),
#   direct            8 KiB O_DIRECT write, no sync (one write request through the stack),
#   fdatasync+direct  8 KiB O_DIRECT write + fdatasync (one write + one flush request).
# PROFILES (default zero) adds other profiles (e.g. nvme-plp: its fdatasync against its cost plus the
# stack's). Variant × profile runs alternate inside each round, the order rotating between rounds. Raw JSON
# goes to OUT.
# BINS="before=/path/a after=/path/b" alternates binaries too (each run's tag is then <name>:<variant>).
# Usage: bench/lab_stack_cost.sh   env: ROUNDS (5), RUN_SECS per case (1), VARIANTS (all four), PROFILES, OUT
#        (bench/results/lab-<date>/stack-cost-<time>), BIN (target/release/syncbench, built if missing), BINS.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/syncbench}
[[ -n "${BIN:-}" ]] || cargo build --release -q -p syncbench
out=${OUT:-bench/results/lab-$(date -u +%F)/stack-cost-$(date -u +%H%M)}
mkdir -p "$out"
rounds=${ROUNDS:-5}
read -r -a variant_list <<<"${VARIANTS:-base dio thr4 dio+thr4}"
read -r -a profiles <<<"${PROFILES:-zero}"
read -r -a bins <<<"${BINS:-=$bin}"
runs=()
for b in "${bins[@]}"; do
    for p in "${profiles[@]}"; do for v in "${variant_list[@]}"; do runs+=("$b|$v@$p"); done; done
done
{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) vCPUs, $(uname -r), /tmp on $(findmnt -no FSTYPE,SOURCE --target /tmp | tr -s ' ')"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg) (other engineers' builds share the machine)"
    echo "rounds $rounds, run secs ${RUN_SECS:-1} per case, binaries ${BINS:-$bin} ($(git rev-parse --short HEAD))"
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
    n=${#runs[@]}
    for k in $(seq 0 $((n - 1))); do
        run=${runs[$(((k + round) % n))]}
        b=${run%%|*} run=${run#*|}
        name=${b%%=*} bin=${b#*=}
        v=${run%@*} p=${run#*@}
        tag=$v; [[ $p == zero ]] || tag="$v@$p"
        [[ -z $name ]] || tag="$name:$tag"
        read -r dio threads <<<"$(tuning "$v")"
        echo "round $round: ${name:+$name }$v on $p (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$out/machine.txt"
        SYNCBENCH_LAB_LOOP_DIO=$dio SYNCBENCH_LAB_FUSE_THREADS=$threads \
            "$bin" lab run --profile "$p" --fs ext4 --size 1GiB -- sh -c "
            '$bin' run \"\$SYNCBENCH_LAB_MOUNT\" --sections a --methods fdatasync,direct,fdatasync+direct \
                --secs ${RUN_SECS:-1} --rounds 3 --json '$out/run_${tag}_$round.json' >/dev/null &&
            '$bin' lab stats \"\$SYNCBENCH_LAB_MOUNT\" --json '$out/stats_${tag}_$round.json'"
    done
done
python3 bench/lab_stack_cost_summary.py "$out" | tee "$out/summary.md"
