#!/usr/bin/env python3
"""Summarise bench/lab_stack_cost.sh: per variant and method, the median (range) over rounds of each
round's p50 commit latency in µs, and the write / flush cost the stack adds (direct; fdatasync+direct − direct)."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
p50 = {}  # (variant, method) -> [µs per round]
for path in sorted(glob.glob(os.path.join(out, "run_*.json"))):
    variant = os.path.basename(path)[len("run_"):].rsplit("_", 1)[0]
    doc = json.load(open(path))
    for r in doc["results"]:
        p50.setdefault((variant, r["method"]), []).append(r["latency_ns"]["p50"] / 1000)


def cell(values):
    return f"{statistics.median(values):.0f} ({min(values):.0f}–{max(values):.0f})" if values else "–"


ORDER = ["base", "dio", "thr4", "dio+thr4"]
variants = sorted({v for v, _ in p50}, key=lambda v: (v.partition("@")[2], ORDER.index(v.partition("@")[0])
                                                      if v.partition("@")[0] in ORDER else 9))
methods = ["fdatasync", "direct", "fdatasync+direct"]
print("| variant[@profile, default zero] | rounds | " + " | ".join(f"{m} p50 µs" for m in methods) + " | flush (fdatasync+direct − direct) µs |")
print("|---|---:|" + "---:|" * (len(methods) + 1))
for v in variants:
    rounds = len(p50.get((v, "fdatasync"), []))
    pairs = [a - b for a, b in zip(p50.get((v, "fdatasync+direct"), []), p50.get((v, "direct"), []))]
    print(f"| {v} | {rounds} | " + " | ".join(cell(p50.get((v, m), [])) for m in methods) + f" | {cell(pairs)} |")
