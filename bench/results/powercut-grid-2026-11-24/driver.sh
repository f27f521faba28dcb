#!/usr/bin/env bash
# The 2026-11-24 pass over the cells of issue 18's grid that had only 12 cuts (run from the repo root):
# one bench/powercut_lab.sh per cell group, sequentially, 100 cuts per cell, lab disks under
# TMPDIR=/var/tmp/powercut2/tmp, binary built from commit 2f8e556 (copied so rebuilds don't replace it).
set -u
export OUT=bench/results/powercut-grid-2026-11-24 BIN=/var/tmp/powercut2/syncbench-grid CUTS=100 SEED=24
export TMPDIR=/var/tmp/powercut2/tmp
lab() { PROFILES=$1 FSES=$2 METHODS=$3 WRITE_PROFILE=${4:-} bench/powercut_lab.sh; }
lab cheating-ssd ext4 fsync,open_datasync
lab "" ext4 "" hdd-7200                     # --method write on an honest disk
lab "hdd-7200 nvme-plp raid-bbu" ext4 fsync,open_datasync
lab "ssd-200us hdd-7200 nvme-plp raid-bbu" xfs fsync,open_datasync
lab cheating-ssd xfs fdatasync,fsync,open_datasync
echo "driver finished $(date -u +%FT%TZ)" >> "$OUT/commands.txt"
