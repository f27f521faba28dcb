#!/usr/bin/env bash
# Overhead of `syncbench trace`: the same loops with and without the tracer.
# Usage: bench/trace_overhead.sh [SYNCBENCH_BINARY] [DIR] [ROUNDS]
# Prints the median ns/iteration of each workload under: no tracer, trace, trace --syncs-only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../target/release/syncbench}"
dir="${2:-.}"
rounds="${3:-5}"
exe="$(mktemp -d)/trace_overhead"
trap 'rm -rf "$(dirname "$exe")"' EXIT
gcc -O2 -o "$exe" "$here/trace_overhead.c"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run() { # label, workload, iterations, tracer args...
    local label="$1" workload="$2" n="$3"; shift 3
    local samples=()
    for _ in $(seq "$rounds"); do
        if [ "$#" -eq 0 ]; then
            samples+=("$("$exe" "$workload" "$dir" "$n" | awk '{print $2}')")
        else
            samples+=("$("$bin" trace "$@" -- "$exe" "$workload" "$dir" "$n" 2>/dev/null | awk '{print $2}')")
        fi
    done
    printf '%-8s %-22s %10s ns/iteration  (rounds: %s)\n' "$workload" "$label" \
        "$(printf '%s\n' "${samples[@]}" | median)" "${samples[*]}"
}

for spec in "sync 2000" "write 200000" "other 200000"; do
    set -- $spec
    run "untraced" "$1" "$2"
    run "trace" "$1" "$2"
    run "trace --syncs-only" "$1" "$2" --syncs-only
done
