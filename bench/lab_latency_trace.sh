#!/usr/bin/env bash
# Where an fdatasync's time goes on a lab disk (issue #36: why hdd-7200 and nvme-plp measure longer than
# their profile cost plus the stack's). While `run --sections a --methods fdatasync` measures, bpftrace times
# each request of the lab's stack in legs, by request kind (FUSE WRITE 16, FSYNC 20):
#   to_fuse  the block layer issues it to the loop device (block:block_rq_issue) -> FUSE queues it
#            (fuse:fuse_request_send): the loop driver's worker and the FUSE file's direct I/O path,
#   queued   FUSE queues it -> a server thread's /dev/fuse read returns it (the server thread's wake-up),
#   served   the read returned it -> FUSE ends it (fuse:fuse_request_end): the model's charge, the
#            server's lateness and the reply,
#   back     FUSE ends it -> the loop device completes it (block:block_rq_complete).
# The client does one write and one flush at a time (one 8 KiB fdatasync), so each leg pairs the kind's
# latest event with the next.
# `lab stats` gives the model's charge per kind and how late the replies went out (`reply_late_ns`).
# Usage: bench/lab_latency_trace.sh PROFILE OUT_PREFIX   env: BIN (target/release/syncbench), SECS (2). Root.
# Writes OUT_PREFIX.bt.txt, OUT_PREFIX.run.json, OUT_PREFIX.stats.json, OUT_PREFIX.machine.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: bench/lab_latency_trace.sh PROFILE OUT_PREFIX" >&2; exit 2; }
profile=$1
out=$(realpath -m "$2")
mkdir -p "$(dirname "$out")"
bin=$(realpath "${BIN:-target/release/syncbench}")
bt=$(mktemp /tmp/.syncbench-lat-trace-XXXXXX.bt)
trap 'rm -f "$bt"' EXIT
cat >"$bt" <<'EOF'
// $1: the server's pid, $2: the loop device's dev_t (major << 20 | minor). A FUSE request is named by its
// `unique`; the server's read returns its header (fuse_in_header: u32 len, u32 opcode, u64 unique).
tracepoint:block:block_rq_issue /args->dev == $2/ {
  if (strncmp(args->rwbs, "F", 1) == 0) { @issued_flush = nsecs; }
  else if (strncmp(args->rwbs, "W", 1) == 0) { @issued_write = nsecs; }
}
tracepoint:block:block_rq_complete /args->dev == $2 && strncmp(args->rwbs, "F", 1) == 0/ {
  if (@ended_fsync != 0) { printf("back 20 %d\n", nsecs - @ended_fsync); @ended_fsync = 0; }
  if (@issued_flush != 0) { printf("block 20 %d\n", nsecs - @issued_flush); @issued_flush = 0; }
}
tracepoint:block:block_rq_complete /args->dev == $2 && strncmp(args->rwbs, "W", 1) == 0/ {
  if (@ended_write != 0) { printf("back 16 %d\n", nsecs - @ended_write); @ended_write = 0; }
  if (@issued_write != 0) { printf("block 16 %d\n", nsecs - @issued_write); @issued_write = 0; }
}
tracepoint:fuse:fuse_request_send {
  @sent[args->unique] = nsecs; @op[args->unique] = args->opcode;
  if (args->opcode == 16 && @issued_write != 0) { printf("to_fuse 16 %d\n", nsecs - @issued_write); }
  if (args->opcode == 20 && @issued_flush != 0) { printf("to_fuse 20 %d\n", nsecs - @issued_flush); }
}
tracepoint:syscalls:sys_enter_read /pid == $1/ { @buf[tid] = args->buf; }
tracepoint:syscalls:sys_exit_read /@buf[tid] != 0/ {
  if (args->ret >= 40) {
    $u = *(uint64 *)uptr(@buf[tid] + 8);
    if (@sent[$u] != 0) {
      printf("queued %d %d\n", @op[$u], nsecs - @sent[$u]);
      @recv[$u] = nsecs;
    }
  }
  delete(@buf[tid]);
}
tracepoint:fuse:fuse_request_end {
  $u = args->unique;
  if (@recv[$u] != 0) {
    printf("served %d %d\n", @op[$u], nsecs - @recv[$u]);
  }
  if (@op[$u] == 16) { @ended_write = nsecs; }
  if (@op[$u] == 20) { @ended_fsync = nsecs; }
  delete(@sent[$u]); delete(@op[$u]); delete(@recv[$u]);
}
END { clear(@sent); clear(@op); clear(@recv); clear(@buf); clear(@issued_write); clear(@issued_flush); clear(@ended_write); clear(@ended_fsync); }
EOF
echo "$(date -u +%FT%TZ) profile $profile load $(cut -d' ' -f1-3 /proc/loadavg), $bin" | tee "$out.machine.txt"
"$bin" lab run --profile "$profile" --fs ext4 --size 1GiB -- sh -c "
    set -- \$(stat -Lc '%t %T' \"\$(findmnt -no SOURCE \"\$SYNCBENCH_LAB_MOUNT\")\")
    bpftrace -q '$bt' \$(pgrep -P \$PPID -f '^[^ ]* lab serve') \$(( (0x\$1 << 20) | 0x\$2 )) >'$out.bt.txt' 2>/dev/null & tracer=\$!
    sleep 2
    '$bin' run \"\$SYNCBENCH_LAB_MOUNT\" --sections a --methods fdatasync --secs ${SECS:-2} --rounds 1 \
        --json '$out.run.json' >/dev/null
    kill -INT \$tracer; wait \$tracer || true
    '$bin' lab stats \"\$SYNCBENCH_LAB_MOUNT\" --json '$out.stats.json' >/dev/null"
# Per leg and kind: events, median and p90 µs (only the traced run's requests: the trace starts after mkfs).
python3 - "$out.bt.txt" "$out.stats.json" "$out.run.json" <<'PY' | tee "$out.summary.txt"
import json, statistics, sys
legs = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 3 and parts[1] in ("16", "20"):
        legs.setdefault((parts[0], {"16": "write", "20": "flush"}[parts[1]]), []).append(int(parts[2]) / 1000)
for leg in ("to_fuse", "queued", "served", "back", "block"):
    for kind in ("write", "flush"):
        v = sorted(legs.get((leg, kind), []))
        if v:
            print(f"{leg:8} {kind:5} n {len(v):4}  p50 {statistics.median(v):9.1f} µs  p90 {v[int(len(v) * 0.9)]:9.1f}")
device = json.load(open(sys.argv[2]))["device"]
for name in ("write_latency_ns", "flush_latency_ns", "reply_late_ns"):
    lat = device.get(name)
    if lat:
        print(f"lab stats {name}: p50 {lat['p50'] / 1000:.1f} µs  p90 {lat['p90'] / 1000:.1f}")
print(f"run: fdatasync p50 {json.load(open(sys.argv[3]))['results'][0]['latency_ns']['p50'] / 1000:.1f} µs")
PY
