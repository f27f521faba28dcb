#!/usr/bin/env bash
# Alternate: lab zero with and without a PM QoS cpu_dma_latency=0 holder
set -euo pipefail
bin=/work/main/target/release/syncbench
out=${OUT:-/var/tmp/qos/out}; mkdir -p "$out"
rounds=${ROUNDS:-6}
for round in $(seq 1 $rounds); do
  if (( round % 2 )); then order="off on"; else order="on off"; fi
  for mode in $order; do
    holder=
    if [[ $mode == on ]]; then
      python3 -c "import os,struct,time; f=os.open('/dev/cpu_dma_latency',os.O_WRONLY); os.write(f,struct.pack('i',0)); time.sleep(100000)" &
      holder=$!; sleep 0.3
    fi
    echo "round $round $mode load $(cut -d' ' -f1 /proc/loadavg)"
    "$bin" lab run --profile zero --fs ext4 --size 1GiB -- sh -c "
      '$bin' run \"\$SYNCBENCH_LAB_MOUNT\" --sections a --methods fdatasync,direct,fdatasync+direct --secs 1 --rounds 3 --json '$out/run_${mode}_$round.json' >/dev/null"
    [[ -z $holder ]] || { kill $holder; wait $holder 2>/dev/null || true; }
  done
done
python3 - "$out" <<'PY'
import glob,json,os,statistics,sys
d={}
for p in glob.glob(os.path.join(sys.argv[1],"run_*.json")):
    mode=os.path.basename(p).split("_")[1]
    for r in json.load(open(p))["results"]:
        d.setdefault((mode,r["method"]),[]).append(r["latency_ns"]["p50"]/1000)
for k,v in sorted(d.items()):
    print(k, len(v), f"median {statistics.median(v):.1f} range {min(v):.1f}-{max(v):.1f}")
PY
