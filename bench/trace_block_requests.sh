#!/usr/bin/env bash
# Do `syncbench trace --pid`'s request lines ("The disks", docs/trace.md) count every request the disk's
# own counters count? A loop of N 4 KiB pwrite + fdatasync (the integration test's program,
# crates/syncbench/tests/integration/trace_data/fdatasync_loop.c) is traced with `--pid`; the disk's
# /sys/block/DISK/stat is read after the tracer started and before the loop exits (inside its window);
# per round: the stat's flush and write deltas beside the report's flush requests, write requests and
# empty write completions (`flush_carriers`: an fsync's empty flush write, which the stat counts as a
# write, and on a disk without FUA the empty end of a flushed data write), and the load average.
# Usage: bench/trace_block_requests.sh [SYNCBENCH_BINARY] [DIR] [ROUNDS] [N] [idle|load]
# `load`: a second, untraced write+fdatasync loop (dd conv=fsync, on DIR too) runs throughout, and the
# two vCPUs are kept busy by one spinning shell per CPU, so completions interrupt running tasks.
# Environment: TRACE_ARGS (extra trace flags, e.g. `--tracer perf` for the perf-event path).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 [BIN] [DIR] [ROUNDS] [N] [idle|load]"
release_bin "${1:-}"
dir="${2:-/var/tmp}"
rounds="${3:-3}"
n="${4:-200}"
kind="${5:-idle}"
read -r -a trace_args <<<"${TRACE_ARGS:-}"
case "$kind" in idle | load) ;; *) usage_error ;; esac
need_dir "$dir"
work="$(mktemp -d "$dir/blkreq.XXXXXX")"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
exit_on_signals
gcc -O2 -o "$work/loop" "$repo/crates/syncbench/tests/integration/trace_data/fdatasync_loop.c"
dev=$(df --output=source "$work" | tail -1)
disk=$(basename "$(readlink -f "/sys/class/block/$(basename "$dev")/..")")
[ -e "/sys/block/$disk/stat" ] || disk=$(basename "$dev")
if [ "$kind" = load ]; then
    sh -c 'while :; do dd if=/dev/zero of="$1" bs=4k count=1 conv=fsync status=none; done' _ "$work/beside" &
    pids+=($!)
    for cpu in $(seq 0 $(($(nproc) - 1))); do taskset -c "$cpu" sh -c 'while :; do :; done' & pids+=($!); done
fi
echo "bin: $bin ($("$bin" --version)) dir: $dir disk: $disk n: $n kind: $kind trace args: ${trace_args[*]:-} date: $(date -u +%FT%TZ)"
# loop_*: the stat's deltas while the loop ran (inside the trace's window: a lower bound); win_*: the stat
# line of the report (the trace's own window, which the block programs cover: should equal the requests).
printf '%-5s %-16s %7s %7s | %7s %7s | %7s %7s %7s | %s\n' round load loop_fl loop_wr win_fl win_wr fl_req wr_req carrier \
    "block mechanism"
for r in $(seq 1 "$rounds"); do
    fifo_in="$work/in" fifo_out="$work/out"
    rm -f "$fifo_in" "$fifo_out"; mkfifo "$fifo_in" "$fifo_out"
    "$work/loop" "$work/data" "$n" <"$fifo_in" >"$fifo_out" &
    lp=$!
    exec 3>"$fifo_in" 4<"$fifo_out"
    read -r line <&4; [ "$line" = ready ]
    "$bin" trace --pid "$lp" --json "$work/trace.json" "${trace_args[@]}" 2>"$work/trace.err" 3>&- 4<&- &
    tp=$!
    until grep -q "syncbench: tracing" "$work/trace.err" 2>/dev/null; do sleep 0.05; done
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    read -r -a a <"/sys/block/$disk/stat"
    echo go >&3
    read -r line <&4; [ "$line" = done ]
    read -r -a b <"/sys/block/$disk/stat"
    exec 3>&- 4<&-
    wait "$lp"; wait "$tp"
    python3 - "$work/trace.json" "$disk" "$r" "$load" "$((b[15] - a[15]))" "$((b[4] - a[4]))" <<'PY'
import json, sys
path, disk, r, load, fl, wr = sys.argv[1:]
t = json.load(open(path))["trace"]
d = next(d for d in t["devices"] if d["disk"] == disk)
q = d["requests"]
s = d["stat"]
print(f'{r:<5} {load:<16} {fl:>7} {wr:>7} | {s["flushes"]:>7} {s["writes"]:>7} | {q["flushes"]["count"]:>7} '
      f'{q["writes"]["count"]:>7} {q.get("flush_carriers", "-"):>7} | {t.get("block_mechanism", "(not reported)")}; '
      f'lost: calls {t["lost_events"]}, block hits {t.get("block_lost_events", "-")} (dropped {t.get("block_dropped_events", "-")}); {t["duration_s"]:.2f} s')
PY
    [ -z "${OUT_PREFIX:-}" ] || cp "$work/trace.err" "$OUT_PREFIX.round$r.txt"
done
