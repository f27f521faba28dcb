#!/usr/bin/env python3
"""Medians and ranges of bench/groupcommit_ab.sh's rounds: per place and build, the 16-client speedup over one
client (each round's own ratio), commits per flush at 16 clients, and commits/s at 1 and 16 clients."""
import glob, json, os, re, statistics, sys

def points(path):
    with open(path) as f:
        doc = json.load(f)
    return {p["clients"]: p for p in doc["commit"]["points"] if p.get("group_commit")}

def fmt(values, digits=1):
    if not values:
        return "—"
    med = statistics.median(values)
    return f"{med:.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"

out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    m = re.match(r"(.+)-(before|after)-r(\d+)\.json$", os.path.basename(path))
    if m:
        runs.setdefault((m.group(1), m.group(2)), []).append(points(path))
print("| where | build | rounds | 16 clients / 1 | commits/flush at 16 | commits/s at 1 | commits/s at 16 | 64 clients / 1 |")
print("|---|---|---|---|---|---|---|---|")
for (where, build), rounds in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1] != "before")):
    ok = [r for r in rounds if 1 in r and 16 in r and r[1]["commits_per_s"] > 0]
    speedup = [r[16]["commits_per_s"] / r[1]["commits_per_s"] for r in ok]
    speedup64 = [r[64]["commits_per_s"] / r[1]["commits_per_s"] for r in ok if 64 in r]
    per_flush = [r[16]["commits_per_sync"] for r in ok]
    one = [r[1]["commits_per_s"] for r in ok]
    sixteen = [r[16]["commits_per_s"] for r in ok]
    print(f"| {where} | {build} | {len(ok)} | {fmt(speedup)}× | {fmt(per_flush, 2)} | {fmt(one, 0)} | {fmt(sixteen, 0)} | {fmt(speedup64)}× |")
