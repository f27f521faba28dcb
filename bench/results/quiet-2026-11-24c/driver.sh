#!/usr/bin/env bash
# Issue 23 after session 5's change to the pipelined design (a ring copy covers its page for the rest of its
# checkpoint cycle; --dw-ring, default 256 MiB): fpw against both double-write designs, run back to back by
# the lead with nothing else meant to run on the VM (load average in each file).
# Usage (from the repository root, as root, after `cargo build --release -p syncbench`):
#   bash bench/results/quiet-2026-11-24c/driver.sh        (STEPS="one two ring" by default)
set -euo pipefail
out=${OUT:-bench/results/quiet-2026-11-24c}
bin=$PWD/target/release/syncbench
mkdir -p "$out" /var/tmp/quiet/dw /var/tmp/quiet/mnt /var/tmp/quiet/tmp
steps=${STEPS:-one two ring}
if [[ " $steps " == *" one "* ]]; then
  python3 bench/pages_dw_design.py --bin "$bin" --dir /var/tmp/quiet/dw --rounds 5 --secs 18 \
    --pools 16MiB,48MiB,256MiB --label one --out "$out/dw-one-device.jsonl" >"$out/dw-one-device.txt" 2>&1
fi
if [[ " $steps " == *" ring "* ]]; then
  # the ring's size: 64 MiB holds well under a checkpoint cycle's copies at 16 MiB (about 160 MiB)
  python3 bench/pages_dw_design.py --bin "$bin" --dir /var/tmp/quiet/dw --rounds 3 --secs 18 \
    --pools 16MiB --label one-ring64 --extra "--dw-ring 64MiB" \
    --out "$out/dw-one-device-ring64.jsonl" >"$out/dw-one-device-ring64.txt" 2>&1
fi
if [[ " $steps " == *" two "* ]]; then
  # log and double-write area on a lab nvme-plp disk, data on the virtio disk
  TMPDIR=/var/tmp/quiet/tmp "$bin" lab up --profile nvme-plp --fs ext4 --size 2GiB /var/tmp/quiet/mnt
  trap '"$bin" lab down /var/tmp/quiet/mnt' EXIT
  python3 bench/pages_dw_design.py --bin "$bin" --dir /var/tmp/quiet/dw --rounds 5 --secs 18 \
    --pools 16MiB,48MiB,256MiB --label two --extra "--wal-dir /var/tmp/quiet/mnt --dw-dir /var/tmp/quiet/mnt" \
    --out "$out/dw-two-devices-nvme-plp.jsonl" >"$out/dw-two-devices-nvme-plp.txt" 2>&1
fi
