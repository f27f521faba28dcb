#!/usr/bin/env bash
# The quiet-machine reruns of 2026-11-24 (issues 20, 22, 23), run back to back by the lead after every
# engineer's build had finished: nothing else ran on the VM but this script (load average in each file).
# Usage (from the repository root, as root, after `cargo build --release -p syncbench`):
#   bash bench/results/quiet-2026-11-24/driver.sh
set -euo pipefail
out=bench/results/quiet-2026-11-24
bin=$PWD/target/release/syncbench
mkdir -p /var/tmp/quiet/dw
steps=${STEPS:-trace run dw}
if [[ " $steps " == *" trace "* ]]; then
# issue 20: overhead of `trace --pid` on a write+fdatasync loop; `base` = main before the reader fix
BASE_BIN=${BASE_BIN:-/tmp/attx/syncbench-main} MODES="untraced attached base" \
  bench/trace_attach_overhead.sh "$bin" /var/tmp/quiet 11 2000 sync >"$out/trace-attach.txt" 2>&1
fi
if [[ " $steps " == *" run "* ]]; then
# issue 22: run's timing loop against the C loop
ROUNDS=9 BIN="$bin" bash bench/run_overhead.sh >"$out/run-overhead.txt" 2>&1
# the same against main before this session's changes (61cd249), alternating one round each
for r in 1 2 3 4 5 6 7; do for b in ${BASE_BIN:-/tmp/attx/syncbench-main} "$bin"; do
  echo "== round $r bin $b load $(cut -d' ' -f1 /proc/loadavg)"
  ROUNDS=1 SECS=2 BIN=$b bash bench/run_overhead.sh 2>&1 | grep -E '^ +1 '
done; done >"$out/run-overhead-ab.txt"
fi
[[ " $steps " == *" dw "* ]] || exit 0
# issue 23: fpw against both double-write designs, one device
python3 bench/pages_dw_design.py --bin "$bin" --dir /var/tmp/quiet/dw --rounds 5 --secs 18 \
  --pools 16MiB,48MiB,256MiB --label one --out "$out/dw-one-device.jsonl" >"$out/dw-one-device.txt" 2>&1
# issue 23: log and double-write area on a lab nvme-plp disk, data on the virtio disk
mkdir -p /var/tmp/quiet/mnt /var/tmp/quiet/tmp
TMPDIR=/var/tmp/quiet/tmp "$bin" lab up --profile nvme-plp --fs ext4 --size 2GiB /var/tmp/quiet/mnt
trap '"$bin" lab down /var/tmp/quiet/mnt' EXIT
python3 bench/pages_dw_design.py --bin "$bin" --dir /var/tmp/quiet/dw --rounds 5 --secs 18 \
  --pools 16MiB,256MiB --label two --extra "--wal-dir /var/tmp/quiet/mnt --dw-dir /var/tmp/quiet/mnt" \
  --out "$out/dw-two-devices-nvme-plp.jsonl" >"$out/dw-two-devices-nvme-plp.txt" 2>&1
