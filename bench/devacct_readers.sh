#!/usr/bin/env bash
# The device columns' coverage by tracepoint reader (issue #33): `run --quick` with each reader in turn,
# ROUNDS rounds, the order rotated every round, as root. READERS (default "default perf") names them:
# `default` runs with SYNCBENCH_TRACER unset (the eBPF programs), any other name is given as
# SYNCBENCH_TRACER (`perf`: perf samples, the fallback; `bpf-tracepoint` on the present-rawtp build). With LOAD set, that command runs in a loop in the background for
# the whole bench (e.g. LOAD='cargo build --release' in another checkout). Per run: the lowest ratio over
# the cases of (requests traced + hits reported lost) to what /sys/block counted in the same window,
# flushes and writes (cases with >= 10 of the kind), and the cases under 95 %. Writes OUT/ROUND-READER.json,
# .txt and OUT/summary.txt.
# Usage: bench/devacct_readers.sh DIR OUT [ROUNDS]   env: BIN (default: this repo's release build), LOAD
set -euo pipefail
usage="usage: bench/devacct_readers.sh DIR OUT [ROUNDS]"
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || usage_error
dir=$1 out=$2 rounds=${3:-3}
need_dir "$dir"
release_bin "${BIN:-}"
mkdir -p "$out"
exit_on_signals
loader=
cleanup() { [ -z "$loader" ] || kill -- -"$loader" 2>/dev/null || true; }
trap cleanup EXIT
if [ -n "${LOAD:-}" ]; then
  set -m; (while true; do bash -c "$LOAD" >/dev/null 2>&1 || true; done) & loader=$!; set +m
  sleep 5
fi
echo "bin: $bin ($("$bin" --version))  dir: $dir  READERS: ${READERS:-default perf}  LOAD: ${LOAD:-none}  date: $(date -u +%FT%TZ)" | tee "$out/summary.txt"
read -r -a readers <<< "${READERS:-default perf}"
n=${#readers[@]}
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    reader=${readers[$(( (i + r - 1) % n ))]}
    env=(); [ "$reader" = default ] || env=(SYNCBENCH_TRACER="$reader")
    load=$(cut -d' ' -f1 /proc/loadavg)
    env "${env[@]}" "$bin" run "$dir" --quick --json "$out/$r-$reader.json" > "$out/$r-$reader.txt" 2>&1
    python3 - "$out/$r-$reader.json" "$r" "$reader" "$load" <<'PY' | tee -a "$out/summary.txt"
import json, sys
path, r, reader, load = sys.argv[1:]
doc = json.load(open(path))
worst, low, cases, lost_all = 9.0, [], 0, 0
for c in doc["results"]:
    d = c.get("device") or {}
    if not c.get("ops") or not d.get("devices"):
        continue
    cases += 1
    dev, lost = d["devices"][-1], d.get("trace_lost_samples", 0)
    lost_all += lost
    q, st = dev.get("requests") or {}, dev["stat"]
    for kind, seen, counted in (("flushes", q.get("flushes", {}).get("count", 0), st["flushes"]),
                                ("writes", q.get("writes", {}).get("count", 0) + q.get("flush_carriers", 0), st["writes"])):
        if counted < 10:
            continue
        ratio = (seen + lost) / counted
        worst = min(worst, ratio)
        if ratio < 0.95:
            low.append(f"{c['section']} {c['label'].strip()} {kind} {seen}+{lost}/{counted}")
print(f"round {r} {reader:14} load {load:>5}: {cases} cases, lowest {worst:.3f}, lost+skipped {lost_all}, under 95%: {len(low)} {'; '.join(low[:4])}")
PY
  done
done
