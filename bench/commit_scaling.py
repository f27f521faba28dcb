#!/usr/bin/env python3
"""Issue #4's scaling goal, side by side: 16 clients of the reference log against 1 client.

Each round measures, one right after another so the device's drift hits all alike:
  1 client; 16 clients; 16 clients with a commit delay that ends once all 16 wait
  (`--commit-delay-us DELAY --commit-delay-count clients`);
  and, with --base OLD_SYNCBENCH, the same 1 and 16 client points with an older build (A/B).
Every point also records the CPU time the hypervisor stole from this VM while it ran (the `steal`
column of /proc/stat): a vCPU that is descheduled by the host slows wake-ups and flushes alike,
and rounds with steal are reported apart.

Target: 16 clients >= 8x one client.
Usage: bench/commit_scaling.py [--dir D] [--rounds N] [--secs S] [--delay-us U] [--base BIN] [--prio CMD]
                               [--method M]
"""

import argparse
import csv
import io
import shlex
import statistics
import subprocess
import sys

STEAL_QUIET_PCT = 2.0
METHOD = "fdatasync"  # a round counts as quiet when every point saw less steal than this


def cpu_ticks():
    """(steal, total) jiffies summed over all CPUs."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice; guests are inside user/nice
    return fields[7], sum(fields[:8])


def point(binary, prio, directory, secs, clients, extra):
    cmd = prio + [binary, "commit", directory, "--secs", str(secs), "--clients", str(clients), "--csv", "-"]
    cmd += ["--method", METHOD]
    steal0, total0 = cpu_ticks()
    out = subprocess.run(cmd + extra, check=True, capture_output=True, text=True).stdout
    steal1, total1 = cpu_ticks()
    row = list(csv.DictReader(io.StringIO(out)))[-1]
    return {
        "commits_per_s": float(row["commits_per_s"]),
        "commits_per_sync": float(row["commits_per_sync"]),
        "sync_us": float(row["sync_latency_ns_mean"]) / 1000,
        "steal_pct": 100.0 * (steal1 - steal0) / max(1, total1 - total0),
    }


def summarize(label, ratios):
    if not ratios:
        print(f"  {label}: no rounds")
        return
    print(
        f"  {label}: median {statistics.median(ratios):.2f}x "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f}, n={len(ratios)})"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=float, default=3)
    ap.add_argument("--delay-us", type=int, default=100)
    ap.add_argument("--bin", default="target/release/syncbench")
    ap.add_argument("--base", help="an older syncbench binary to measure alongside (A/B)")
    ap.add_argument("--prio", default="chrt -f 10", help="command prefix ('' for none)")
    ap.add_argument("--method", default="fdatasync", help="the log's sync method (syncbench commit --method)")
    a = ap.parse_args()
    global METHOD
    METHOD = a.method
    prio = shlex.split(a.prio)
    gathered = ["--commit-delay-us", str(a.delay_us), "--commit-delay-count", "clients"]
    variants = [("1", a.bin, 1, []), ("16", a.bin, 16, []), ("16 gathered", a.bin, 16, gathered)]
    if a.base:
        variants += [("base 1", a.base, 1, []), ("base 16", a.base, 16, [])]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"method {a.method}, dir {a.dir}, {a.rounds} rounds x {a.secs} s per point, prio '{a.prio}', load average {load}")
    print(f"{'round':>5}  {'variant':<12} {'commits/s':>10} {'commits/sync':>12} {'sync us':>8} {'steal %':>8} {'x 1 client':>10}")
    rounds = []
    for r in range(1, a.rounds + 1):
        got = {}
        for label, binary, clients, extra in variants:
            got[label] = point(binary, prio, a.dir, a.secs, clients, extra)
        for label, p in got.items():
            one = got["base 1" if label.startswith("base") else "1"]["commits_per_s"]
            print(
                f"{r:>5}  {label:<12} {p['commits_per_s']:>10.0f} {p['commits_per_sync']:>12.2f} "
                f"{p['sync_us']:>8.0f} {p['steal_pct']:>8.1f} {p['commits_per_s'] / one:>10.2f}"
            )
        sys.stdout.flush()
        rounds.append(got)

    def ratios(label, one_label, only_quiet):
        out = []
        for got in rounds:
            if only_quiet and any(p["steal_pct"] >= STEAL_QUIET_PCT for p in got.values()):
                continue
            out.append(got[label]["commits_per_s"] / got[one_label]["commits_per_s"])
        return out

    print()
    for only_quiet, title in ((False, "all rounds"), (True, f"rounds with steal < {STEAL_QUIET_PCT}% at every point")):
        print(f"{title}:")
        summarize("16 clients / 1 client", ratios("16", "1", only_quiet))
        summarize("16 gathered / 1 client", ratios("16 gathered", "1", only_quiet))
        if a.base:
            summarize("base: 16 clients / 1 client", ratios("base 16", "base 1", only_quiet))
            summarize("16 clients, this build / base", ratios("16", "base 16", only_quiet))
    print("target: 16 clients >= 8x one client")


if __name__ == "__main__":
    main()
