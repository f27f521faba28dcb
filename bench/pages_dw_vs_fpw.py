#!/usr/bin/env python3
"""Issue #5's goal `dw` throughput >= `fpw` throughput with the large buffer pool, side by side: each
round runs `syncbench pages DIR --mode fpw,dw` (order alternating every round) with one pool size, and
the median of the per-round ratios dw / fpw is reported with a distribution-free 95% interval.

Usage: bench/pages_dw_vs_fpw.py [--dir D] [--rounds N] [--secs S] [--pool 256MiB] [--scale 10] [--clients 8]
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_vs_pg_test_fsync import median_ci95  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--secs", type=int, default=15)
    ap.add_argument("--pool", default="256MiB")
    ap.add_argument("--scale", default="10")
    ap.add_argument("--clients", default="8")
    ap.add_argument("--bin", default="target/release/syncbench")
    a = ap.parse_args()
    print(f"dir {a.dir}, pool {a.pool}, scale {a.scale}, {a.clients} clients, {a.rounds} rounds x {a.secs} s per mode")
    print(f"{'round':>5}  {'first':<5} {'fpw tps':>9} {'dw tps':>9} {'dw/fpw':>7}")
    ratios = []
    for r in range(1, a.rounds + 1):
        modes = "fpw,dw" if r % 2 else "dw,fpw"
        cmd = [a.bin, "pages", a.dir, "--mode", modes, "--buffer-pool", a.pool, "--scale", a.scale,
               "--clients", a.clients, "--secs", str(a.secs), "--json", "-"]
        doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        tps = {row["mode"]: row["tps"] for row in doc["pages"]["rows"]}
        ratios.append(tps["dw"] / tps["fpw"])
        print(f"{r:>5}  {modes.split(',')[0]:<5} {tps['fpw']:>9.0f} {tps['dw']:>9.0f} {ratios[-1]:>7.3f}", flush=True)
    median, low, high = median_ci95(ratios)
    print(f"\ndw / fpw: median {median:.3f} (95% CI {low:.3f}-{high:.3f}, n={len(ratios)}); target >= 1.0")


if __name__ == "__main__":
    main()
