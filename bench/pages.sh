#!/usr/bin/env bash
# Reproduce the shape of the 2012 double-write table (shared/seeds/003_*) on this machine:
# protection mode (none, fpw, dw, atomic) × buffer pool (small, large) × layout (everything in one
# directory; log and double-write area on a second file system).
#
#   bench/pages.sh [DIR]            (root needed for the second file system: an ext4 loop device)
#
# Environment: BIN (default target/release/syncbench), SECS (30), SCALE (10), CLIENTS (8),
# CKPT (checkpoint seconds, 10), POOLS (16MiB,256MiB), OUT (bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/syncbench}
DIR=${1:-/work/.syncbench-bench-pages}
SECS=${SECS:-30}
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-8}
CKPT=${CKPT:-10}
POOLS=${POOLS:-16MiB,256MiB}
OUT=${OUT:-bench/results}
mkdir -p "$DIR" "$OUT"
[ -x "$BIN" ] || cargo build --release -p syncbench

common=(--mode none,fpw,dw,atomic --scale "$SCALE" --clients "$CLIENTS" --secs "$SECS"
        --checkpoint-secs "$CKPT" --buffer-pool "$POOLS")

echo "== one directory: $DIR"
"$BIN" pages "$DIR" "${common[@]}" --json "$OUT/pages-one-fs.json" --markdown "$OUT/pages-one-fs.md"

if [ "$(id -u)" != 0 ]; then
    echo "skipping the second file system: needs root (losetup, mkfs.ext4, mount)" >&2
    exit 0
fi
IMG="$DIR/.syncbench-pages-second-fs.img"
MNT=$(mktemp -d /tmp/.syncbench-pages-mnt-XXXXXX)
truncate -s 8G "$IMG"
LOOP=$(losetup --find --show "$IMG")
cleanup() { umount "$MNT" 2>/dev/null || true; losetup -d "$LOOP" 2>/dev/null || true; rm -f "$IMG"; rmdir "$MNT"; }
trap cleanup EXIT
mkfs.ext4 -q -F "$LOOP"
mount "$LOOP" "$MNT"
echo "== log and double-write area on a second file system: $LOOP (ext4 on a file in $DIR) at $MNT"
"$BIN" pages "$DIR" "${common[@]}" --wal-dir "$MNT" --dw-dir "$MNT" \
    --json "$OUT/pages-two-fs.json" --markdown "$OUT/pages-two-fs.md"
