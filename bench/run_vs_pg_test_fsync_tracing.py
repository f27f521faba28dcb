#!/usr/bin/env python3
"""Does device accounting's tracing slow `run`'s commits? pg_test_fsync against syncbench twice per round:
as root (the block tracepoints record every request while commits are timed) and as an unprivileged user
(no tracepoints: the /sys/block counters only), the three next to each other in time, their order rotated
round by round so that none always follows another. The same cases as run_vs_pg_test_fsync.py (one 8 KiB
write per commit at offset 0, fdatasync and fsync), whose functions this reuses.

Per round and method: traced/pg, untraced/pg and traced/untraced; the summary is each ratio's median over
the rounds with the distribution-free 95% interval of the median.

Usage: run_vs_pg_test_fsync_tracing.py BIN PG_TEST_FSYNC DIR ROUNDS SECS UID
DIR must be writable by UID (the unprivileged run's user).
"""

import sys

from run_vs_pg_test_fsync import METHODS, median_ci95, pg_round, syncbench_round

ORDERS = (("traced", "untraced", "pg"), ("pg", "traced", "untraced"), ("untraced", "pg", "traced"))


def main():
    binary, pg, directory, rounds, secs, uid = sys.argv[1:7]
    unprivileged = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", binary]
    measure = {
        "pg": lambda: pg_round(pg, directory, secs),
        "traced": lambda: {m: v[0] for m, v in syncbench_round(binary, directory, secs).items()},
        "untraced": lambda: {m: v[0] for m, v in syncbench_round(unprivileged, directory, secs).items()},
    }
    ratios = {(m, k): [] for m in METHODS for k in ("traced/pg", "untraced/pg", "traced/untraced")}
    print("round  order                   method     pg_ops_per_s  traced  untraced  traced/pg  untraced/pg  traced/untraced")
    for i in range(int(rounds)):
        order = ORDERS[i % len(ORDERS)]
        got = {name: measure[name]() for name in order}
        for m in METHODS:
            p, t, u = got["pg"][m], got["traced"][m], got["untraced"][m]
            for key, value in (("traced/pg", t / p), ("untraced/pg", u / p), ("traced/untraced", t / u)):
                ratios[(m, key)].append(value)
            print(f"{i + 1:5d}  {','.join(order):22s}  {m:9s}  {p:12.1f}  {t:6.1f}  {u:8.1f}  {t / p:9.3f}  "
                  f"{u / p:11.3f}  {t / u:15.3f}", flush=True)
    print()
    print("method     ratio            rounds  median  ci95_of_median  min    max")
    for (m, key), values in ratios.items():
        med, lo, hi = median_ci95(values)
        ci = f"{lo:.3f}-{hi:.3f}" if lo is not None else "n/a"
        print(f"{m:9s}  {key:15s}  {len(values):6d}  {med:6.3f}  {ci:>14s}  {min(values):.3f}  {max(values):.3f}")


if __name__ == "__main__":
    main()
