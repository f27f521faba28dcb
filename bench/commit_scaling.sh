#!/usr/bin/env bash
# Issue #4's scaling goal, side by side: 16 clients vs 1 client of the reference log (see commit_scaling.py).
# Usage: bench/commit_scaling.sh [DIR]   env: ROUNDS (default 5), SECS per point (3), DELAY (100 us),
#        BASE (an older syncbench binary to A/B against), PRIO (default `chrt -f 10`), METHOD (fdatasync),
#        LOOP_FS (ext4, xfs or btrfs: run on that file system, made on a loop device whose backing file is in DIR;
#        root only). The loop layer puts a second journal and the backing file's fsync under every flush,
#        so a flush costs more there than on DIR itself.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p syncbench
dir=${1:-/var/tmp}
if [[ -n "${LOOP_FS:-}" ]]; then
    case "$LOOP_FS" in
        ext4 | xfs | btrfs) ;;
        *) echo "LOOP_FS must be ext4, xfs or btrfs, not '$LOOP_FS'" >&2; exit 2 ;;
    esac
    img=$(mktemp "$dir/.syncbench-commit-scaling-XXXXXX.img")
    mnt=$(mktemp -d /tmp/.syncbench-commit-scaling-mnt-XXXXXX)
    truncate -s 4G "$img"
    loop=$(losetup --find --show "$img")
    cleanup() { umount "$mnt" 2>/dev/null || true; losetup -d "$loop" 2>/dev/null || true; rm -f "$img"; rmdir "$mnt"; }
    trap cleanup EXIT
    case "$LOOP_FS" in
        ext4) mkfs.ext4 -q -F "$loop" ;;
        xfs) mkfs.xfs -q -f "$loop" ;;
        btrfs) mkfs.btrfs -q -f "$loop" ;;
    esac
    mount "$loop" "$mnt"
    echo "$LOOP_FS on $loop, backed by $img ($(findmnt -no FSTYPE --target "$dir") on $(findmnt -no SOURCE --target "$dir"))"
    dir=$mnt
fi
args=(--method "${METHOD:-fdatasync}" --dir "$dir" --rounds "${ROUNDS:-5}" --secs "${SECS:-3}" --delay-us "${DELAY:-100}" --prio "${PRIO-chrt -f 10}")
[[ -n "${BASE:-}" ]] && args+=(--base "$BASE")
echo "$(nproc) cores, $(uname -r), $(findmnt -no FSTYPE --target "$dir") on $(findmnt -no SOURCE --target "$dir")"
python3 bench/commit_scaling.py "${args[@]}"
