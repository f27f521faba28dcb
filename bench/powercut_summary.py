#!/usr/bin/env python3
"""Summarise `powercut lab --json` files: one Markdown row per profile x fs x method, with the share of cuts
that lost acknowledged records, and records/s as median (min-max) over the cuts.
Usage: bench/powercut_summary.py FILE.json..."""
import json
import statistics
import sys

if len(sys.argv) < 2:
    sys.exit("usage: bench/powercut_summary.py FILE.json...  (files written by `syncbench powercut lab --json`)")
print("| profile | fs | method | cuts | acknowledged | lost | torn | cuts with loss | torn by next overwrite | cuts with < 10 acks | records/s median (min-max) | device lost writes (sum) |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for path in sys.argv[1:]:
    with open(path) as f:
        doc = json.load(f)
    for c in doc["cells"]:
        cuts = c["cuts"]
        if not cuts:
            continue
        lossy = sum(1 for k in cuts if k["lost"] + k["torn"] > 0)
        rates = [k["records_per_s"] for k in cuts]
        method = c["method"] if c["durable"] else c["method"] + " (not durable)"
        print(
            f"| {c['profile']} | {c['fs']} | {method} | {len(cuts)} | {sum(k['acknowledged'] for k in cuts)} | "
            f"{sum(k['lost'] for k in cuts)} | {sum(k['torn'] for k in cuts)} | {lossy} ({100 * lossy / len(cuts):.0f}%) | "
            f"{sum(k.get('torn_by_next_overwrite', 0) for k in cuts)} | {sum(1 for k in cuts if k['acknowledged'] < 10)} | "
            f"{statistics.median(rates):.0f} ({min(rates):.0f}-{max(rates):.0f}) | {sum(k['device_lost_writes'] for k in cuts)} |"
        )
