#!/bin/sh
# Record the device-accounting verdict fixtures (root): `run --quick --sections a` on
#   lab-zero-ext4         a lab disk, zero profile (honest, no FUA: a loop device offers none)
#   lab-hdd-ignores-flush a lab disk, hdd-7200 profile answering flushes without doing them
#   lab-hdd-honest        a lab disk, hdd-7200 profile, honest
#   loop-ext4-nobarrier   a loop device over a file, ext4 mounted -o nobarrier (no flush reaches the device)
# Usage: bench/devacct_fixtures.sh OUTDIR [SYNCBENCH]
set -eu
out=$1
sb=${2:-target/release/syncbench}
work=$(mktemp -d /tmp/devacct-fixtures.XXXXXX)
trap 'umount "$work/mnt" 2>/dev/null || true; [ -n "${loopdev:-}" ] && losetup -d "$loopdev" 2>/dev/null; "$sb" lab down "$work/lab" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mkdir -p "$out" "$work/lab" "$work/mnt"
lab() {
    name=$1; shift
    "$sb" lab up --size 512MiB "$@" "$work/lab" >/dev/null
    "$sb" run "$work/lab" --quick --sections a --json "$out/$name.json" >/dev/null
    "$sb" lab down "$work/lab" >/dev/null
}
lab lab-zero-ext4 --profile zero
lab lab-hdd-ignores-flush --profile hdd-7200 --honesty ignores-flush --flush-us 0
lab lab-hdd-honest --profile hdd-7200
truncate -s 512M "$work/img"
loopdev=$(losetup --find --show "$work/img")
mkfs.ext4 -q "$loopdev"
mount -o nobarrier "$loopdev" "$work/mnt"
"$sb" run "$work/mnt" --quick --sections a --json "$out/loop-ext4-nobarrier.json" >/dev/null
