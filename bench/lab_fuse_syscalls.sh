#!/usr/bin/env bash
# What the lab server's threads spend in system calls while `run` does 8 KiB write + fdatasync on `zero`
# (issue #36: what the model costs in image reads/writes, and what FUSE over io_uring would take off: the
# /dev/fuse `read` that fetches a request and the `writev` that replies). bpftrace, filtered to the server
# process (`lab serve`, a child of `lab run`); the syscall numbers are x86-64's (0 read, 17 pread64,
# 18 pwrite64, 20 writev, 10 mprotect, 202 futex).
# Usage: bench/lab_fuse_syscalls.sh OUT_PREFIX   env: BIN (target/release/syncbench). Root.
# Writes OUT_PREFIX.bt.txt, OUT_PREFIX.run.json, OUT_PREFIX.stats.json.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: bench/lab_fuse_syscalls.sh OUT_PREFIX" >&2; exit 2; }
out=$(realpath -m "$1")
mkdir -p "$(dirname "$out")"
bin=$(realpath "${BIN:-target/release/syncbench}")
bt=$(mktemp /tmp/.syncbench-fuse-syscalls-XXXXXX.bt)
trap 'rm -f "$bt"' EXIT
cat >"$bt" <<'EOF'
// $1: the server's pid. Per call µs of the /dev/fuse read (includes waiting for a request) and writev
// (a reply); every other syscall's count and time; all syscalls by thread.
tracepoint:raw_syscalls:sys_enter /pid == $1 && strncmp(comm, "fuser-", 6) == 0/ { @start[tid] = nsecs; @id[tid] = args->id; }
tracepoint:raw_syscalls:sys_exit /@start[tid]/ {
  $us = (nsecs - @start[tid]) / 1000;
  if (@id[tid] == 20) { @writev_reply_ns = stats(nsecs - @start[tid]); @writev_us = hist($us); }
  else if (@id[tid] == 0) { @read_fetch_us = hist($us); }
  else { @other_ns[@id[tid]] = stats(nsecs - @start[tid]); }
  delete(@start[tid]); delete(@id[tid]);
}
tracepoint:raw_syscalls:sys_enter /pid == $1/ { @syscalls_by_thread_and_id[comm, args->id] = count(); }
END { clear(@start); clear(@id); }
EOF
echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg), $bin" | tee "$out.machine.txt"
"$bin" lab run --profile zero --fs ext4 --size 1GiB -- sh -c "
    sleep 1
    bpftrace -q '$bt' \$(pgrep -P \$PPID -f 'lab serve') >'$out.bt.txt' 2>/dev/null & tracer=\$!
    sleep 2
    '$bin' run \"\$SYNCBENCH_LAB_MOUNT\" --sections a --methods fdatasync --secs 2 --rounds 1 --json '$out.run.json' >/dev/null
    kill -TERM \$tracer; wait \$tracer
    '$bin' lab stats \"\$SYNCBENCH_LAB_MOUNT\" --json '$out.stats.json' >/dev/null"
grep -E 'writev_reply_ns|other_ns' "$out.bt.txt"
