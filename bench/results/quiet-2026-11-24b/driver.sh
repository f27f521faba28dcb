#!/usr/bin/env bash
# The quiet-machine reruns of 2026-11-24, second session (issues 20 and 23), run back to back by the lead
# after every engineer had finished: nothing else ran on the VM but this script (load average in each file).
# Usage (from the repository root, as root, after `cargo build --release -p syncbench`):
#   bash bench/results/quiet-2026-11-24b/driver.sh        (STEPS="trace dw" by default)
set -euo pipefail
out=bench/results/quiet-2026-11-24b
bin=$PWD/target/release/syncbench
mkdir -p "$out" /var/tmp/quiet/dw /var/tmp/quiet/mnt /var/tmp/quiet/tmp
steps=${STEPS:-trace dw}
if [[ " $steps " == *" trace "* ]]; then
  # issue 20: overhead of `trace --pid` on a write+fdatasync loop, eBPF (default) and perf, alternating
  MODES="untraced attached-perf attached-bpf" \
    bench/trace_attach_overhead.sh "$bin" /var/tmp/quiet 31 2000 sync >"$out/trace-attach-31.txt" 2>&1
fi
[[ " $steps " == *" dw "* ]] || exit 0
# issue 23: fpw against both double-write designs, one device
python3 bench/pages_dw_design.py --bin "$bin" --dir /var/tmp/quiet/dw --rounds 5 --secs 18 \
  --pools 16MiB,48MiB,256MiB --label one --out "$out/dw-one-device.jsonl" >"$out/dw-one-device.txt" 2>&1
# issue 23: log and double-write area on a lab nvme-plp disk, data on the virtio disk
TMPDIR=/var/tmp/quiet/tmp "$bin" lab up --profile nvme-plp --fs ext4 --size 2GiB /var/tmp/quiet/mnt
trap '"$bin" lab down /var/tmp/quiet/mnt' EXIT
python3 bench/pages_dw_design.py --bin "$bin" --dir /var/tmp/quiet/dw --rounds 5 --secs 18 \
  --pools 16MiB,256MiB --label two --extra "--wal-dir /var/tmp/quiet/mnt --dw-dir /var/tmp/quiet/mnt" \
  --out "$out/dw-two-devices-nvme-plp.jsonl" >"$out/dw-two-devices-nvme-plp.txt" 2>&1
