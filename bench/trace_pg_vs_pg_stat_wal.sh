#!/usr/bin/env bash
# `syncbench trace --comm postgres` against PostgreSQL's own WAL sync accounting (pg_stat_wal: wal_sync,
# wal_sync_time with track_wal_io_timing=on), over the same window, while pgbench runs.
# Usage: bench/trace_pg_vs_pg_stat_wal.sh [SYNCBENCH_BINARY] [DIR] [ROUNDS] [SECS] [CLIENTS]   (root)
# Per round: attach (no --secs), wait for "tracing", read pg_stat_wal, run pgbench -T SECS, wait 2 s for
# the statistics to be flushed, read pg_stat_wal again, then Ctrl-C (SIGINT) the trace. The trace's
# window holds the pg_stat_wal window plus idle moments on both sides (no WAL is written then).
# Compared: fdatasync calls on files in pg_wal/ (count, total wait) with Δwal_sync and Δwal_sync_time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(realpath "${1:-$here/../target/release/syncbench}")"
dir="${2:-.}"
rounds="${3:-3}"
secs="${4:-30}"
clients="${5:-4}"
. "$here/pg_cluster.sh"
pgbin="$(find_pgbin)"
[ -n "$pgbin" ] || { echo "PostgreSQL is not installed (Debian package postgresql)" >&2; exit 2; }
work="$(mktemp -d "$(realpath "$dir")/.syncbench-trace-pg-XXXXXX")"
chown postgres: "$work"
tracer=""
cleanup() {
    if [ -n "$tracer" ]; then kill -INT "$tracer" 2>/dev/null || true; fi
    pg_cluster_stop
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
pg_cluster_start "$work" 5497
psql_ "ALTER SYSTEM SET track_wal_io_timing = on" && psql_ "ALTER SYSTEM SET wal_sync_method = fdatasync" >/dev/null
psql_ "SELECT pg_reload_conf()" >/dev/null
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}'), pgbench -c $clients -T $secs, $rounds rounds"
stat_wal() { psql_ "SELECT wal_sync || ' ' || wal_sync_time FROM pg_stat_wal"; }
for r in $(seq "$rounds"); do
    "$bin" trace --comm postgres --json "$work/trace.json" 2>"$work/trace.txt" &
    tracer=$!
    until grep -q "syncbench: tracing" "$work/trace.txt" 2>/dev/null; do sleep 0.1; done
    read -r sync0 time0 <<<"$(stat_wal)"
    tps="$(pgbench_ -c "$clients" -j "$clients" -T "$secs" | awk '/^tps/ {print $3; exit}')"
    sleep 2
    read -r sync1 time1 <<<"$(stat_wal)"
    kill -INT "$tracer"
    wait "$tracer" || true
    tracer=""
    python3 - "$work/trace.json" "$((sync1 - sync0))" "$(echo "$time1 - $time0" | bc -l)" "$r" "$tps" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
pg_n, pg_ms, r, tps = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
wal = [f for f in t["files"] if f["dir"].endswith("/pg_wal/") and f["call"] == "fdatasync"]
n = sum(f["count"] for f in wal)
ms = sum(f["total_ns"] for f in wal) / 1e6
print(f"round {r}: pgbench {tps} tps; trace {t['duration_s']:.1f} s, lost {t['lost_events']}: pg_wal fdatasync {n} calls, "
      f"{ms:.1f} ms; pg_stat_wal: wal_sync {pg_n}, wal_sync_time {pg_ms:.1f} ms; "
      f"count {100 * (n - pg_n) / pg_n:+.2f}%, time {100 * (ms - pg_ms) / pg_ms:+.2f}%")
PY
    cp "$work/trace.txt" "$work/trace-round$r.txt"
done
echo "## last round's report"
cat "$work/trace.txt"
