#!/usr/bin/env python3
"""Summarize bench/commit.sh output (JSON from syncbench, text from pgbench) as Markdown tables."""
import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/out")

def load(pattern):
    return [json.loads(p.read_text()) for p in sorted(out.glob(pattern))]


runs = [next(r for r in doc["results"] if r["method"] == "fdatasync") for doc in load("commit_run_[0-9]*.json")]
ones = [doc["commit"]["points"][0] for doc in load("commit_1client_[0-9]*.json")]
pts = json.loads((out / "commit_fdatasync.json").read_text())["commit"]["points"]
pg = {}
for line in (out / "commit_pgbench.txt").read_text().splitlines()[1:]:
    c, tps, lat = (line.split() + ["", "", ""])[:3]
    pg[int(c)] = (float(tps or 0), lat)

print("| round | run fdatasync 512 B ops/s | p50 µs | commit 1 client 512 B commits/s | p50 µs | ratio |")
print("|---:|---:|---:|---:|---:|---:|")
ratios = []
for i, (r, o) in enumerate(zip(runs, ones), 1):
    ratios.append(o["commits_per_s"] / r["ops_per_s"])
    print(f"| {i} | {r['ops_per_s']:.0f} | {r['latency_ns']['p50']/1000:.0f} | {o['commits_per_s']:.0f} "
          f"| {o['latency_ns']['p50']/1000:.0f} | {ratios[-1]:.2f} |")
print(f"\nmedian ratio {statistics.median(ratios):.2f}\n")
naive = {p["clients"]: p for p in pts if not p["group_commit"]}
group = {p["clients"]: p for p in pts if p["group_commit"]}
one_client = group[min(group)]["commits_per_s"]
print("| clients | group commits/s | × 1 client | commits/sync | p50 µs | p99 µs | p99.9 µs "
      "| naive commits/s | group ÷ naive | PostgreSQL tps | ours ÷ PG |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for c in sorted(group):
    g, n = group[c], naive.get(c)
    l = g["latency_ns"]
    pg_tps = pg.get(c, (0, ""))[0]
    print(f"| {c} | {g['commits_per_s']:.0f} | {g['commits_per_s']/one_client:.1f} | {g['commits_per_sync']:.2f} "
          f"| {l['p50']/1000:.0f} | {l['p99']/1000:.0f} | {l['p999']/1000:.0f} "
          f"| {n['commits_per_s']:.0f} | {g['commits_per_s']/n['commits_per_s']:.1f} "
          f"| {pg_tps:.0f} | {g['commits_per_s']/pg_tps if pg_tps else float('nan'):.1f} |")

print("\ncommit_delay at 16 clients:\n")
print("| commit_delay µs | commits/s | commits/sync | p50 µs | p99 µs |")
print("|---:|---:|---:|---:|---:|")
for p in json.loads((out / "commit_delay.json").read_text())["commit"]["points"]:
    l = p["latency_ns"]
    print(f"| {p['commit_delay_us']} | {p['commits_per_s']:.0f} | {p['commits_per_sync']:.2f} "
          f"| {l['p50']/1000:.0f} | {l['p99']/1000:.0f} |")
print("\nMethods (group commit):\n")
print("| method | 1 client commits/s | p50 µs | 16 clients commits/s | commits/sync | p50 µs | p99 µs |")
print("|---|---:|---:|---:|---:|---:|---:|")
for path in sorted(out.glob("commit_method_*.json")):
    doc = json.loads(path.read_text())["commit"]
    a, b = doc["points"]
    print(f"| {doc['method']} | {a['commits_per_s']:.0f} | {a['latency_ns']['p50']/1000:.0f} "
          f"| {b['commits_per_s']:.0f} | {b['commits_per_sync']:.2f} | {b['latency_ns']['p50']/1000:.0f} "
          f"| {b['latency_ns']['p99']/1000:.0f} |")
