#!/usr/bin/env bash
# What the block tracepoints' reader costs `run`'s timed commits: `run --sections a --methods fdatasync`
# on a lab disk of the zero profile (no emulated device time: the commit is CPU and the stack) with each
# reader of READERS (default "ftrace bpf"), ROUNDS pairs, order alternating. Prints ops/s per run and the
# per-pair ratio to the first reader.
#   sudo bash bench/tracer_cost_lab.sh BIN OUT [ROUNDS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: sudo bash bench/tracer_cost_lab.sh BIN OUT [ROUNDS]"
[ $# -ge 2 ] || usage_error
bin=$1 out=$2 rounds=${3:-6}
[ -x "$bin" ] || usage_error "; $bin is not an executable"
mkdir -p "$out"
read -r -a readers <<< "${READERS:-ftrace bpf}"
work=$(mktemp -d /tmp/tracer-cost.XXXXXX)
mount=$work/mnt
mkdir "$mount"
cleanup() { "$bin" lab down "$mount" >/dev/null 2>&1 || true; rmdir "$mount" "$work" 2>/dev/null || true; }
trap cleanup EXIT
exit_on_signals
TMPDIR=/dev/shm "$bin" lab up --profile zero --size 512MiB "$mount" >/dev/null
echo "bin: $bin  readers: ${readers[*]}  rounds: $rounds  load: $(cut -d' ' -f1-3 /proc/loadavg)  date: $(date -u +%FT%TZ)" | tee "$out/summary.txt"
for r in $(seq 1 "$rounds"); do
  order=("${readers[@]}"); [ $((r % 2)) -eq 0 ] && order=("${readers[1]}" "${readers[0]}")
  line="round $r:"
  for reader in "${order[@]}"; do
    SYNCBENCH_TRACER=$reader "$bin" run "$mount" --sections a --methods fdatasync --secs 2 --rounds 1 \
      --json "$out/$r-$reader.json" >"$out/$r-$reader.txt" 2>&1
    ops=$(python3 -c 'import json,sys; c=[c for c in json.load(open(sys.argv[1]))["results"] if c["label"].strip()=="fdatasync"][0]; print(round(c["ops_per_s"],1), c["device"].get("trace_reader"))' "$out/$r-$reader.json")
    line="$line $reader $ops;"
  done
  echo "$line load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/summary.txt"
done
