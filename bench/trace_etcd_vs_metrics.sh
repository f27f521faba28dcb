#!/usr/bin/env bash
# `syncbench trace --pid $(etcd)` against etcd's own WAL fsync histogram
# (etcd_disk_wal_fsync_duration_seconds_count/_sum on /metrics), over the same window, under a put load.
# Usage: bench/trace_etcd_vs_metrics.sh [SYNCBENCH_BINARY] [DIR] [ROUNDS] [SECS] [WRITERS]   (root;
# Debian packages etcd-server, etcd-client, curl). etcd listens on 127.0.0.1 only, data in a temporary
# directory under DIR, removed at exit. Per round: attach, wait for "tracing", read the metric, run
# WRITERS loops of `etcdctl put` for SECS seconds, wait 1 s, read the metric again, SIGINT the trace.
# Compared: fdatasync on files in member/wal/ (count, total wait) with Δcount and Δsum of the metric.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(realpath "${1:-$here/../target/release/syncbench}")"
dir="${2:-.}"
rounds="${3:-3}"
secs="${4:-30}"
writers="${5:-4}"
command -v etcd >/dev/null || { echo "etcd is not installed (Debian package etcd-server)" >&2; exit 2; }
work="$(mktemp -d "$(realpath "$dir")/.syncbench-trace-etcd-XXXXXX")"
client=http://127.0.0.1:23791
etcd_pid="" tracer=""
cleanup() {
    if [ -n "$tracer" ]; then kill -INT "$tracer" 2>/dev/null || true; fi
    if [ -n "$etcd_pid" ]; then kill "$etcd_pid" 2>/dev/null || true; wait "$etcd_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
etcd --name bench --data-dir "$work/data" --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls http://127.0.0.1:23801 --initial-advertise-peer-urls http://127.0.0.1:23801 \
    --initial-cluster bench=http://127.0.0.1:23801 >"$work/etcd.log" 2>&1 &
etcd_pid=$!
until ETCDCTL_API=3 etcdctl --endpoints "$client" endpoint health >/dev/null 2>&1; do sleep 0.2; done
metric() { curl -s "$client/metrics" | awk '/^etcd_disk_wal_fsync_duration_seconds_(count|sum)/ {printf "%s ", $2}'; }
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(etcd --version | head -1), $writers writers of etcdctl put for $secs s, $rounds rounds"
for r in $(seq "$rounds"); do
    "$bin" trace --pid "$etcd_pid" --json "$work/trace.json" 2>"$work/trace.txt" &
    tracer=$!
    until grep -q "syncbench: tracing" "$work/trace.txt" 2>/dev/null; do sleep 0.1; done
    read -r sum0 count0 <<<"$(metric)"
    end=$((SECONDS + secs))
    for w in $(seq "$writers"); do
        (i=0; while [ $SECONDS -lt $end ]; do
            ETCDCTL_API=3 etcdctl --endpoints "$client" put "k$w-$i" "v$i" >/dev/null; i=$((i + 1)); done) &
    done
    wait $(jobs -p | grep -v -e "^$etcd_pid\$" -e "^$tracer\$") 2>/dev/null || true
    sleep 1
    read -r sum1 count1 <<<"$(metric)"
    kill -INT "$tracer"
    wait "$tracer" || true
    tracer=""
    python3 - "$work/trace.json" "$count0" "$count1" "$sum0" "$sum1" "$r" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
c0, c1, s0, s1, r = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
m_n, m_ms = c1 - c0, (s1 - s0) * 1e3
wal = [f for f in t["files"] if "/member/wal/" in f["dir"] and f["call"] == "fdatasync"]
n = sum(f["count"] for f in wal)
ms = sum(f["total_ns"] for f in wal) / 1e6
print(f"round {r}: trace {t['duration_s']:.1f} s, lost {t['lost_events']}: wal fdatasync {n} calls, {ms:.1f} ms; "
      f"etcd_disk_wal_fsync_duration_seconds: count {m_n:.0f}, sum {m_ms:.1f} ms; "
      f"count {100 * (n - m_n) / m_n:+.2f}%, time {100 * (ms - m_ms) / m_ms:+.2f}%")
PY
    cp "$work/trace.txt" "$work/trace-round$r.txt"
done
echo "## last round's report"
cat "$work/trace.txt"
