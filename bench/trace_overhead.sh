#!/usr/bin/env bash
# Overhead of `syncbench trace`: the same loops with and without the tracer.
# Usage: bench/trace_overhead.sh [SYNCBENCH_BINARY] [DIR] [ROUNDS]
# For each workload, the modes are interleaved round by round (so load drift hits all of them alike) and
# the median ns/iteration over the rounds is printed, with every sample.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../target/release/syncbench}"
dir="${2:-.}"
rounds="${3:-7}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
exe="$work/trace_overhead"
gcc -O2 -o "$exe" "$here/trace_overhead.c"

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

one() { # workload iterations mode -> ns/iteration
    local workload="$1" n="$2" mode="$3"
    case "$mode" in
        untraced) "$exe" "$workload" "$dir" "$n" ;;
        trace) "$bin" trace -- "$exe" "$workload" "$dir" "$n" 2>/dev/null ;;
        syncs-only) "$bin" trace --syncs-only -- "$exe" "$workload" "$dir" "$n" 2>/dev/null ;;
        no-sync) "$bin" trace --no-sync -- "$exe" "$workload" "$dir" "$n" 2>/dev/null ;;
    esac | awk '{print $2}'
}

echo "# $(uname -r), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), dir $dir, $rounds rounds"
for spec in "sync 2000" "write 200000" "other 200000" "sfr 20000"; do
    set -- $spec
    workload="$1" n="$2"
    modes="untraced trace syncs-only"
    [ "$workload" = sync ] && modes="$modes no-sync"
    declare -A samples=()
    for _ in $(seq "$rounds"); do
        for mode in $modes; do
            samples[$mode]="${samples[$mode]:-} $(one "$workload" "$n" "$mode")"
        done
    done
    for mode in $modes; do
        printf '%-6s %-11s median %9s ns/iteration  (samples:%s)\n' "$workload" "$mode" \
            "$(echo "${samples[$mode]}" | median)" "${samples[$mode]}"
    done
    unset samples
done
