#!/usr/bin/env bash
# Reproduce docs/fsync-errors.md: every case with fsync, then with fdatasync (root, /dev/fuse, loop devices).
# Usage: sudo bench/fsync_errors.sh [OUT_DIR]   (default: ./fsync-errors-results)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-fsync-errors-results}"
mkdir -p "$out"
cargo build --quiet --features fuse -p syncbench
bin=target/debug/syncbench
uname -r >"$out/kernel.txt"
for sync in fsync fdatasync; do
  /usr/bin/time -f "%e s elapsed" "$bin" fsync-errors --sync "$sync" \
    --markdown "$out/$sync.md" --json "$out/$sync.json" >"$out/$sync.txt"
done
echo "results in $out/"
