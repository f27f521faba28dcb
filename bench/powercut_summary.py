#!/usr/bin/env python3
"""Summarise `powercut lab --json` files: one Markdown row per profile x fs x method, with the share of cuts
that lost acknowledged records, records/s as median (min-max) over the cuts, and the results directory the
row comes from. Rows are in grid order (profile, fs, method), whatever the order of the files.
Usage: bench/powercut_summary.py FILE.json..."""
import json
import os
import statistics
import sys

PROFILES = ["hdd-7200", "ssd-200us", "nvme-plp", "raid-bbu", "cheating-ssd"]
METHODS = ["fdatasync", "fsync", "open_datasync"]


def order(c):
    p = PROFILES.index(c["profile"]) if c["profile"] in PROFILES else len(PROFILES)
    m = METHODS.index(c["method"]) if c["method"] in METHODS else len(METHODS)
    return (not c["durable"], p, c["profile"], c["fs"], m, c["method"])


if len(sys.argv) < 2:
    sys.exit("usage: bench/powercut_summary.py FILE.json...  (files written by `syncbench powercut lab --json`)")
cells = []
for path in sys.argv[1:]:
    with open(path) as f:
        doc = json.load(f)
    for c in doc["cells"]:
        if c["cuts"]:
            cells.append(dict(c, source=os.path.basename(os.path.dirname(os.path.abspath(path)))))
print("| profile | fs | method | cuts | acknowledged | lost | torn | cuts with loss | torn by next overwrite | cuts with < 10 acks | unusable fs | records/s median (min-max) | device lost writes (sum) | results |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for c in sorted(cells, key=order):
    cuts = c["cuts"]
    lossy = sum(1 for k in cuts if k["lost"] + k["torn"] > 0)
    rates = [k["records_per_s"] for k in cuts]
    method = c["method"] if c["durable"] else c["method"] + " (not durable)"
    print(
        f"| {c['profile']} | {c['fs']} | {method} | {len(cuts)} | {sum(k['acknowledged'] for k in cuts)} | "
        f"{sum(k['lost'] for k in cuts)} | {sum(k['torn'] for k in cuts)} | {lossy} ({100 * lossy / len(cuts):.0f}%) | "
        f"{sum(k.get('torn_by_next_overwrite', 0) for k in cuts)} | {sum(1 for k in cuts if k['acknowledged'] < 10)} | "
        f"{len(c.get('unusable_fs', []))} | "
        f"{statistics.median(rates):.0f} ({min(rates):.0f}-{max(rates):.0f}) | {sum(k['device_lost_writes'] for k in cuts)} | "
        f"{c['source']} |"
    )
