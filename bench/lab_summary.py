#!/usr/bin/env python3
"""Summarize bench/lab_bench.sh output: median and range over rounds, as Markdown."""
import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])


def rounds(pattern):
    return [json.loads(p.read_text()) for p in sorted(out.glob(pattern))]


def fdatasync_8k(doc):
    """The 8 KiB fdatasync overwrite case of a `run --json` document."""
    cases = [r for r in doc["results"] if r["method"] == "fdatasync" and r["write_size_bytes"] == 8192
             and r.get("error") is None and r["ops"] > 0]
    cases.sort(key=lambda r: (r.get("section") != "one_write", r.get("file_state") != "overwrite"))
    return cases[0]


def spread(values, fmt="{:.0f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


print(f"rounds: {len(list(out.glob('run_zero_*.json')))}\n")
print("## fdatasync 8 KiB overwrite (run --quick), p50 µs: median (range)\n")
print("| disk | p50 µs | ops/s |")
print("|---|---:|---:|")
p50 = {}
for disk in ["host", "zero", "ssd-200us", "hdd-7200"]:
    docs = rounds(f"run_{disk}_*.json")
    if not docs:
        continue
    cases = [fdatasync_8k(d) for d in docs]
    p50[disk] = [c["latency_ns"]["p50"] / 1000 for c in cases]
    print(f"| {disk} | {spread(p50[disk])} | {spread([c['ops_per_s'] for c in cases])} |")
if "zero" in p50:
    stack = statistics.median(p50["zero"])
    print(f"\nstack's own cost: {stack:.0f} µs (median p50 on zero)\n")
    print("| disk | measured p50 µs | profile: flush + write + 8 KiB transfer µs | expected = stack + profile µs "
          "| measured ÷ expected |")
    print("|---|---:|---:|---:|---:|")
    for disk in ["ssd-200us", "hdd-7200"]:
        if disk not in p50:
            continue
        params = rounds(f"stats_{disk}_*.json")[0]["lab"]["params"]
        transfer = 8192 * 1e6 / params["bandwidth_bytes_per_s"] if params["bandwidth_bytes_per_s"] else 0
        cost = params["flush_ns"] / 1000 + params["write_ns"] / 1000 + transfer
        measured = statistics.median(p50[disk])
        print(f"| {disk} | {measured:.0f} | {cost:.0f} | {stack + cost:.0f} | {measured / (stack + cost):.2f} |")
    if "host" in p50:
        host = statistics.median(p50["host"])
        print(f"\nhost file system: {host:.0f} µs p50; zero ÷ host = {stack / host:.2f}")

print("\n## commit --clients 1,4,16,64 (group commit): commits/s, median (range)\n")
print("| disk | 1 | 4 | 16 | 64 | 16 ÷ 1 | commits per sync at 16 |")
print("|---|---:|---:|---:|---:|---:|---:|")
for disk in ["zero", "ssd-200us", "hdd-7200"]:
    docs = rounds(f"commit_{disk}_*.json")
    if not docs:
        continue
    by = {}
    ratio = []
    per_sync = []
    for d in docs:
        pts = {p["clients"]: p for p in d["commit"]["points"] if p.get("group_commit", True)}
        for c, p in pts.items():
            by.setdefault(c, []).append(p["commits_per_s"])
        ratio.append(pts[16]["commits_per_s"] / pts[1]["commits_per_s"])
        per_sync.append(pts[16]["commits_per_sync"])
    cells = " | ".join(spread(by[c]) for c in [1, 4, 16, 64])
    print(f"| {disk} | {cells} | {spread(ratio, '{:.1f}')} | {spread(per_sync, '{:.1f}')} |")
