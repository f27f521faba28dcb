#!/usr/bin/env python3
"""What one flush costs by write size: a plain pwrite + fdatasync loop (no syncbench), 2 s per size, on a
16 MiB pre-written file in DIR, with the block-layer requests it caused (/proc/diskstats of DEVICE).

Usage: bench/flush_by_write_size.py [--dir /var/tmp] [--device vda] [--sizes 296,2516,4736,8192] [--rounds 2]
"""

import argparse
import os
import time

FILE_BYTES = 16 << 20


def disk(device):
    """(write requests, sectors written, flush requests) of a block device."""
    with open("/proc/diskstats") as f:
        for line in f:
            fields = line.split()
            if fields[2] == device:
                return int(fields[7]), int(fields[9]), int(fields[18])
    raise SystemExit(f"no device {device} in /proc/diskstats")


def one(fd, size, secs, device):
    buf = b"x" * size
    before = disk(device)
    started, n, offset = time.monotonic(), 0, 0
    while time.monotonic() - started < secs:
        os.pwrite(fd, buf, offset)
        os.fdatasync(fd)
        offset = (offset + size) % (FILE_BYTES - size)
        n += 1
    after = disk(device)
    writes, sectors, flushes = (a - b for a, b in zip(after, before))
    print(f"{size:>6} B  {n / secs:>8.0f} /s  {writes / n:.2f} writes  {sectors / 2 / n:.2f} KiB  {flushes / n:.2f} flushes per op")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--device", default="vda")
    ap.add_argument("--sizes", default="296,2516,4736,8192")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--secs", type=float, default=2)
    a = ap.parse_args()
    path = os.path.join(a.dir, f".syncbench-flush-by-size-{os.getpid()}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for offset in range(0, FILE_BYTES, 8192):
            os.pwrite(fd, b"\0" * 8192, offset)
        os.fsync(fd)
        for _ in range(a.rounds):
            for size in (int(s) for s in a.sizes.split(",")):
                one(fd, size, a.secs, a.device)
    finally:
        os.close(fd)
        os.unlink(path)


if __name__ == "__main__":
    main()
