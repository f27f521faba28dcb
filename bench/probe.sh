#!/usr/bin/env bash
# The probe's fdatasync burst (8 KiB overwrites + fdatasync, ~1 s) on DIR, repeated N times, one line per
# run: flush rate, p50 and p99 latency, and the verdict codes. Needs jq.
# Usage: bench/probe.sh [DIR] [N]     (default: the current directory, 3 runs)
set -euo pipefail
dir="${1:-.}"
runs="${2:-3}"
bin="${SYNCBENCH:-$(dirname "$0")/../target/debug/syncbench}"
for i in $(seq "$runs"); do
  "$bin" probe --json - "$dir" | jq -r --arg i "$i" '
    "run \($i): \(.environment.fs_type) on \([.environment.devices[].name] | join(">")): "
    + "\(.probe.flush_burst.ops_per_s | floor) fdatasync/s, p50 \(.probe.flush_burst.latency_ns.p50 / 1000 | floor) us, "
    + "p99 \(.probe.flush_burst.latency_ns.p99 / 1000 | floor) us; verdicts: \([.verdicts[].code] | join(","))"'
done
