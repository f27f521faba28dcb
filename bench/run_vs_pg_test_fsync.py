#!/usr/bin/env python3
"""Agreement with pg_test_fsync (issue #2): fdatasync and fsync, one 8 KiB write per commit at offset 0.

The flush rate of a virtual disk drifts by +-20% from one second to the next, so two tools measured a
minute apart disagree by the drift, not by what they measure. Each round therefore puts the two
measurements next to each other in time:

- pg_test_fsync runs until it has printed its one-8kB-write `fsync` line (its tests before that: file
  creation, open_datasync, fdatasync, fsync), then is stopped; the rest of its 16 tests are not needed;
- syncbench measures the same two cases (`--pattern rewrite`, which rewrites offset 0 as pg_test_fsync does)
  for at least the same time per case (budget 5 x SECS: its early stop on a +-2% confidence interval never
  comes before 0.2 x budget), immediately before pg_test_fsync in odd rounds and immediately after in even
  rounds, so neither tool always follows the other.

The ratio is syncbench ops/s / pg_test_fsync ops/s per round and method; the summary is the median over the
rounds with a distribution-free 95% confidence interval for it (order statistics of the binomial).
Target: median within 0.9-1.1.

Usage: run_vs_pg_test_fsync.py BIN PG_TEST_FSYNC DIR ROUNDS SECS
"""

import json
import math
import os
import signal
import statistics
import subprocess
import sys

METHODS = ("fdatasync", "fsync")


def pg_round(pg, directory, secs):
    """ops/s of pg_test_fsync's one-8kB-write fdatasync and fsync tests; stops it after the fsync line."""
    path = os.path.join(directory, ".syncbench-pg_test_fsync")
    env = dict(os.environ, LC_ALL="C")
    proc = subprocess.Popen([pg, "-s", str(secs), "-f", path], stdout=subprocess.PIPE, text=True, env=env)
    found, in_section = {}, False
    try:
        for line in proc.stdout:
            in_section = in_section or "one 8kB write" in line
            words = line.split()
            if in_section and words and words[0] in METHODS and words[0] not in found:
                found[words[0]] = float(words[1])
            if len(found) == len(METHODS):
                break
    finally:
        proc.send_signal(signal.SIGINT)  # pg_test_fsync removes its file on SIGINT
        proc.wait()
        if os.path.exists(path):
            os.unlink(path)
    if len(found) != len(METHODS):
        sys.exit(f"pg_test_fsync printed no one-8kB-write line for {set(METHODS) - set(found)}")
    return found


def syncbench_round(binary, directory, secs):
    """`binary` is a path, or a command list that ends with one (e.g. run as another user)."""
    command = binary if isinstance(binary, list) else [binary]
    out = subprocess.run(
        command + ["run", "--pattern", "rewrite", "--sections", "a", "--methods", ",".join(METHODS),
         "--secs", str(5 * float(secs)), "--json", "-", directory],
        check=True, capture_output=True, text=True).stdout
    results = json.loads(out)["results"]
    return {r["method"]: (r["ops_per_s"], r["duration_s"]) for r in results}


def median_ci95(values):
    """Median and the 95% order-statistic interval (ranks from the binomial(n, 1/2) distribution)."""
    xs = sorted(values)
    n = len(xs)
    cdf, k = 0.0, 0
    while True:  # largest k with P(Binomial(n, 1/2) <= k) <= 0.025
        p = math.comb(n, k) / 2**n
        if cdf + p > 0.025:
            break
        cdf += p
        k += 1
    if k == 0:
        return statistics.median(xs), None, None
    return statistics.median(xs), xs[k - 1], xs[n - k]


def main():
    binary, pg, directory, rounds, secs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    ratios = {m: [] for m in METHODS}
    print("round  order          method     pg_ops_per_s  syncbench_ops_per_s  syncbench_s  ratio")
    for i in range(1, rounds + 1):
        if i % 2:
            order = "syncbench,pg"
            sb = syncbench_round(binary, directory, secs)
            pg_found = pg_round(pg, directory, secs)
        else:
            order = "pg,syncbench"
            pg_found = pg_round(pg, directory, secs)
            sb = syncbench_round(binary, directory, secs)
        for m in METHODS:
            ratio = sb[m][0] / pg_found[m]
            ratios[m].append(ratio)
            print(f"{i:5d}  {order:13s}  {m:9s}  {pg_found[m]:12.1f}  {sb[m][0]:19.1f}  {sb[m][1]:11.2f}  "
                  f"{ratio:5.3f}", flush=True)
    print()
    print("method     rounds  median_ratio  ci95_of_median  min    max    verdict (target 0.9-1.1)")
    for m in METHODS:
        med, lo, hi = median_ci95(ratios[m])
        ci = f"{lo:.3f}-{hi:.3f}" if lo is not None else "n/a (too few)"
        verdict = "met" if 0.9 <= med <= 1.1 else "NOT met"
        print(f"{m:9s}  {len(ratios[m]):6d}  {med:12.3f}  {ci:>14s}  {min(ratios[m]):.3f}  "
              f"{max(ratios[m]):.3f}  {verdict}")


if __name__ == "__main__":
    main()
