#!/usr/bin/env python3
"""Issue #4's one-client goal, side by side: the reference log with one client against the physical limit
for one client, `syncbench run`'s fdatasync rate for the same write size (one flush per commit).

Each round runs both right after one another, alternating which goes first, so the disk's drift hits both
alike: `syncbench run DIR --methods fdatasync --sections a --size 512` (512-byte sequential writes) and
`syncbench commit DIR --clients 1 --record-size 472` (472-byte payload + 40-byte header = 512 bytes in the
log). Reports the median of the per-round ratios commit / run with a distribution-free 95% interval, and
the CPU steal of each point (commit's own `cpu_steal_pct`).

Target: ratio >= 0.90.
Usage: bench/commit_one_client.py [--dir D] [--rounds N] [--secs S] [--bin B] [--prio CMD]
"""

import argparse
import csv
import io
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_vs_pg_test_fsync import median_ci95  # noqa: E402


def rows(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def run_rate(prio, binary, directory, secs):
    cmd = prio + [binary, "run", directory, "--methods", "fdatasync", "--sections", "a", "--size", "512"]
    found = [r for r in rows(cmd + ["--secs", str(secs), "--csv", "-"]) if r["method"] == "fdatasync"]
    return float(found[0]["ops_per_s"])


def commit_rate(prio, binary, directory, secs):
    cmd = prio + [binary, "commit", directory, "--clients", "1", "--record-size", "472", "--secs", str(secs)]
    row = rows(cmd + ["--csv", "-"])[-1]
    return float(row["commits_per_s"]), row.get("cpu_steal_pct") or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--secs", type=float, default=2)
    ap.add_argument("--bin", default="target/release/syncbench")
    ap.add_argument("--prio", default="chrt -f 10", help="command prefix ('' for none)")
    a = ap.parse_args()
    prio = shlex.split(a.prio)
    print(f"dir {a.dir}, {a.rounds} rounds x {a.secs} s per point, prio '{a.prio}'")
    print("round  first   run_fdatasync_per_s  commit_1_client_per_s  commit_steal_pct  ratio")
    ratios = []
    for i in range(1, a.rounds + 1):
        if i % 2:
            first = "run"
            run = run_rate(prio, a.bin, a.dir, a.secs)
            commit, steal = commit_rate(prio, a.bin, a.dir, a.secs)
        else:
            first = "commit"
            commit, steal = commit_rate(prio, a.bin, a.dir, a.secs)
            run = run_rate(prio, a.bin, a.dir, a.secs)
        ratios.append(commit / run)
        print(f"{i:>5}  {first:<6}  {run:>19.0f}  {commit:>21.0f}  {steal:>16}  {commit / run:.3f}")
        sys.stdout.flush()
    median, low, high = median_ci95(ratios)
    interval = f"95% CI {low:.3f}-{high:.3f}" if low is not None else "too few rounds for a 95% CI"
    print(f"\ncommit (1 client) / run (fdatasync): median {median:.3f} ({interval}, n={len(ratios)}); target >= 0.90")


if __name__ == "__main__":
    main()
