#!/usr/bin/env bash
# Where the queue goes (issue #36): the same workload on lab ssd-200us (ext4), seen at two layers at once —
# the block layer handing requests to the loop driver (bpftrace on block_rq_issue/complete of the lab's loop
# device) and the device model (`lab stats`: per flush, the most requests in flight at once). If the block
# layer already has one request at a time, the serialisation is above the lab (file system, workload); if
# it has more than the model sees, the loop driver or FUSE holds them back.
# WORKLOAD=commit (default): `syncbench commit --clients 16 --commit-delay-us 0`; WORKLOAD=writers: 16
# independent writers, O_DIRECT 8 KiB + fdatasync on their own files (as bench/lab_queue.sh).
# Usage: bench/lab_queue_layers.sh OUT_PREFIX   env: WORKLOAD, BIN (target/release/syncbench), FS (ext4),
#        PROFILE (ssd-200us). Root (bpftrace, the lab). Writes OUT_PREFIX.bt.txt and OUT_PREFIX.stats.json.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: bench/lab_queue_layers.sh OUT_PREFIX" >&2; exit 2; }
out=$(realpath -m "$1")
mkdir -p "$(dirname "$out")"
bin=$(realpath "${BIN:-target/release/syncbench}")
bt=$(mktemp /tmp/.syncbench-queue-layers-XXXXXX.bt)
trap 'rm -f "$bt"' EXIT
cat >"$bt" <<'EOF'
// $1: the loop device's dev_t (major << 20 | minor). Data requests are keyed by sector: a write in a flush
// sequence is traced as completed twice (its data step and the end of the sequence). Per flush: the most
// requests in flight at the loop driver at once while it ran (the flush included; this count drifts when a
// data request's completion is traced at another sector, so it is checked against the next one), and 1 +
// the data requests handed to the loop driver while it ran (arrivals only: no completion needed).
tracepoint:block:block_rq_issue /args->dev == $1/ {
  if (strncmp(args->rwbs, "F", 1) != 0) { @live[args->sector] = 1; }
  @inflight = @inflight + 1;
  if (strncmp(args->rwbs, "F", 1) == 0) { @flushing = @flushing + 1; @peak = (int64)0; @arrived = (int64)0; @flush_issued = count(); }
  else { @data_issued = count(); if (@flushing > 0) { @data_issued_while_flush_in_flight = count(); @arrived = @arrived + 1; } }
  if (@flushing > 0 && @inflight > @peak) { @peak = @inflight; }
  @depth_at_issue = lhist(@inflight, 0, 32, 1);
}
tracepoint:block:block_rq_complete /args->dev == $1 && strncmp(args->rwbs, "F", 1) == 0/ {
  // A flush issued before the tracer started is not counted on completion either.
  if (@flushing > 0) {
    @flushing = @flushing - 1; @inflight = @inflight - 1; @blk_peak_per_flush = lhist(@peak, 0, 32, 1);
    @flush_plus_data_arriving_during_it = lhist(@arrived + 1, 0, 32, 1);
  }
}
tracepoint:block:block_rq_complete /args->dev == $1 && strncmp(args->rwbs, "F", 1) != 0 && @live[args->sector]/ {
  delete(@live[args->sector]);
  @inflight = @inflight - 1;
}
END { clear(@inflight); clear(@flushing); clear(@peak); clear(@live); clear(@arrived); }
EOF
if [[ ${WORKLOAD:-commit} == writers ]]; then
    # `wait` on the writers only: the tracer is a child of the same shell.
    work='pids=; M=$SYNCBENCH_LAB_MOUNT; for i in $(seq 1 16); do dd if=/dev/zero of=$M/f$i bs=64k count=16 2>/dev/null; done; sync
        for i in $(seq 1 16); do (for j in $(seq 1 60); do dd if=/dev/zero of=$M/f$i bs=8k count=1 seek=$((j % 100)) \
            conv=notrunc,fdatasync oflag=direct 2>/dev/null; done) & pids="$pids $!"; done; wait $pids'
else
    work="'$bin' commit \"\$SYNCBENCH_LAB_MOUNT\" --clients 16 --secs 3 --commit-delay-us 0 --json '$out.commit.json' >/dev/null"
fi
echo "$(date -u +%FT%TZ) workload ${WORKLOAD:-commit}, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out.machine.txt"
"$bin" lab run --profile "${PROFILE:-ssd-200us}" --fs "${FS:-ext4}" --size 1GiB -- sh -c "
    set -- \$(stat -Lc '%t %T' \"\$(findmnt -no SOURCE \"\$SYNCBENCH_LAB_MOUNT\")\")
    bpftrace -q '$bt' \$(( (0x\$1 << 20) | 0x\$2 )) >'$out.bt.txt' 2>/dev/null & tracer=\$!
    sleep 3
    $work
    kill -TERM \$tracer; wait \$tracer
    '$bin' lab stats \"\$SYNCBENCH_LAB_MOUNT\" --json '$out.stats.json' >/dev/null"
grep -A34 '@flush_plus_data_arriving_during_it' "$out.bt.txt" | grep -v '^$' 
python3 -c "import json,sys; print('model:', json.load(open(sys.argv[1]))['device']['queue_depth_during_flush'])" "$out.stats.json"
