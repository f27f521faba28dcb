#!/usr/bin/env bash
# Overhead of `syncbench trace --pid` (perf events, nothing stopped) on a write+fdatasync loop, against the
# same loop untraced and under ptrace (`trace -- CMD`). Root needed for the attached mode.
# Usage: bench/trace_attach_overhead.sh [SYNCBENCH_BINARY] [DIR] [ROUNDS] [ITERATIONS] [sync|sfr]
# `sync` (default): 8 KiB pwrite + fdatasync per iteration. `sfr`: sync_file_range of a clean range, a
# traced call that does no I/O, so attached - untraced is the tracer's cost per traced call, free of the
# disk's noise.
# Each round runs the three modes back to back, in a rotating order (load drift from other work on the
# machine hits all of them alike); printed: the median ns/iteration per mode over the rounds, every
# sample, and the median of the per-round ratios attached/untraced. The loop program waits on a FIFO
# until the tracer says it is tracing, so the attached run is traced from its first iteration; the
# untraced run goes through the same handshake. Each attached run's fdatasync count is checked.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../target/release/syncbench}"
dir="${2:-.}"
rounds="${3:-9}"
n="${4:-3000}"
workload="${5:-sync}"
case "$workload" in sync) call=fdatasync ;; sfr) call=sync_file_range ;; *) echo "workload: sync or sfr" >&2; exit 2 ;; esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
exe="$work/trace_overhead"
gcc -O2 -o "$exe" "$here/trace_overhead.c"

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

one() { # mode -> ns/iteration
    local mode="$1" fifo="$work/go" out="$work/out" err="$work/err"
    rm -f "$fifo" "$out" "$err"
    case "$mode" in
    ptrace)
        "$bin" trace --json "$work/trace.json" -- "$exe" "$workload" "$dir" "$n" >"$out" 2>"$err"
        ;;
    *)
        mkfifo "$fifo"
        sh -c 'read x <"$1"; exec "$2" "$3" "$4" "$5"' _ "$fifo" "$exe" "$workload" "$dir" "$n" >"$out" &
        local pid=$! tracer=""
        if [ "$mode" = attached ]; then
            "$bin" trace --pid "$pid" --json "$work/trace.json" 2>"$err" &
            tracer=$!
            until grep -q "syncbench: tracing" "$err" 2>/dev/null; do sleep 0.05; done
        fi
        echo go >"$fifo"
        wait "$pid"
        if [ -n "$tracer" ]; then
            wait "$tracer"
            # every call of the loop seen, and nothing lost
            python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["trace"]; c={x["call"]: x["count"] for x in t["calls"]}; n=int(sys.argv[2]); assert c.get(sys.argv[3])==n and t["lost_events"]==0, (c, t["lost_events"])' "$work/trace.json" "$n" "$call"
        fi
        ;;
    esac
    awk '{print $2}' "$out"
}

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), dir $dir, $rounds rounds of $n iterations of $workload"
modes=(untraced attached ptrace)
declare -A samples=()
ratios=""
for r in $(seq "$rounds"); do
    declare -A this=()
    for k in 0 1 2; do
        mode="${modes[$(((r + k) % 3))]}"
        this[$mode]="$(one "$mode")"
        samples[$mode]="${samples[$mode]:-} ${this[$mode]}"
    done
    ratio="$(awk -v a="${this[attached]}" -v u="${this[untraced]}" 'BEGIN {printf "%.3f", a / u}')"
    ratios="$ratios $ratio"
    echo "round $r: untraced ${this[untraced]} attached ${this[attached]} ptrace ${this[ptrace]} ns/iteration (attached/untraced $ratio)"
    unset this
done
for mode in "${modes[@]}"; do
    printf '%-9s median %9s ns/iteration  (samples:%s)\n' "$mode" "$(echo "${samples[$mode]}" | median)" "${samples[$mode]}"
done
echo "attached/untraced per round: median $(echo "$ratios" | median), range $(echo "$ratios" | tr ' ' '\n' | grep . | sort -g | sed -n '1p;$p' | paste -sd' ' | sed 's/ / to /')  (ratios:$ratios)"
