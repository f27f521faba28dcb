#!/usr/bin/env bash
# `run --quick`'s request lines (block tracepoints) against /sys/block, per case (issue #33, "Device
# columns"), as root: ROUNDS rounds, each one run per reader in READERS (default "ftrace bpf perf": the
# ftrace instance, the default; the eBPF programs; perf events, as SYNCBENCH_TRACER picks them), the order
# rotated each round. With LOAD set, that command runs in the
# background for the whole bench (e.g. LOAD='cargo build --release' in another checkout) and is stopped
# at the end. Writes OUT/ROUND-READER.json and .txt, and OUT/summary.txt: per run, the lowest ratio of
# traced (+ reported lost) to counted requests over the cases with at least 10 of the kind, and the cases
# under 95 %.
# Usage: bench/request_lines.sh DIR OUT [ROUNDS]   env: BIN (default: this repo's release build), LOAD, READERS
set -euo pipefail
usage="usage: bench/request_lines.sh DIR OUT [ROUNDS]"
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
echo "bin: $bin ($("$bin" --version))  dir: $dir  LOAD: ${LOAD:-none}  date: $(date -u +%FT%TZ)" | tee "$out/summary.txt"
for r in $(seq 1 "$rounds"); do
  read -r -a readers <<< "${READERS:-ftrace bpf perf}"
  shift_by=$(( (r - 1) % ${#readers[@]} ))
  order="${readers[*]:shift_by} ${readers[*]:0:shift_by}"
  for reader in $order; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    SYNCBENCH_TRACER=$reader "$bin" run "$dir" --quick --json "$out/$r-$reader.json" > "$out/$r-$reader.txt" 2>&1
    python3 - "$out/$r-$reader.json" "$r" "$reader" "$load" <<'PY' | tee -a "$out/summary.txt"
import json, sys
path, r, reader, load = sys.argv[1:]
doc = json.load(open(path))
worst, low, cases = 9.0, [], 0
for c in doc["results"]:
    d = c.get("device") or {}
    if not c.get("ops") or not d.get("devices"):
        continue
    cases += 1
    dev, lost = d["devices"][-1], d.get("trace_lost_samples", 0)
    q, st = dev.get("requests") or {}, dev["stat"]
    for kind, seen, counted in (("flushes", q.get("flushes", {}).get("count", 0), st["flushes"]),
                                ("writes", q.get("writes", {}).get("count", 0) + q.get("flush_carriers", 0), st["writes"])):
        if counted < 10:
            continue
        ratio = (seen + lost) / counted
        worst = min(worst, ratio)
        if ratio < 0.95:
            low.append(f"{c['section']} {c['label'].strip()} {kind} {seen}+{lost}/{counted}")
print(f"round {r} {reader:6} load {load:>5}: {cases} cases, lowest {worst:.3f}, under 95%: {len(low)} {'; '.join(low[:4])}")
PY
  done
done
