"""Counts for bench/intervals_under_load.sh: in each run's text, every printed `±N%` above 100, and every
"fastest durable" winner named although another durable case's 95% interval (ops_per_s_low/high in the
JSON, open upwards for a lower bound) overlaps the winner's. Also how many answers said "undecided", and the
widest interval of the run as a factor, so the counts are seen against how noisy the runs were.
Usage: intervals_under_load.py OUT RUNS"""
import json
import re
import sys

out, runs = sys.argv[1], int(sys.argv[2])
SECTIONS = {"one_write": "one", "two_writes": "two"}
totals = {"plus_minus_over_100": 0, "winners_named": 0, "winners_from_overlap": 0, "undecided": 0}


def interval(c):
    low = c.get("ops_per_s_low", c["ops_per_s"] / (1 + c["ci95_rel"]))
    high = float("inf") if c.get("lower_bound") else c.get("ops_per_s_high", c["ops_per_s"] * (1 + c["ci95_rel"]))
    return low, high


for i in range(1, runs + 1):
    text = open(f"{out}/run{i}.txt").read()
    over = [float(p) for p in re.findall(r"±\s*([0-9.]+)%", text) if float(p) > 100]
    doc = json.load(open(f"{out}/run{i}.json"))
    results = [c for c in doc["results"] if c.get("supported") and not c.get("error") and c.get("ops", 0) > 0]
    widest = max((interval(c)[1] / c["ops_per_s"] for c in results if interval(c)[1] != float("inf")), default=1)
    named, wrong, undecided = 0, 0, 0
    for section, how_many in SECTIONS.items():
        line = next((l for l in text.splitlines() if f"fastest durable, {how_many} " in l), "")
        if "undecided" in line:
            undecided += 1
            continue
        m = re.search(r"per commit: (\S+) ", line)
        if not m or "not measured" in line:
            continue
        named += 1
        durable = [c for c in results if c["section"] == section and c["durable"]]
        winner = next(c for c in durable if c["method"] == m.group(1))
        w_low, _ = interval(winner)
        if any(interval(c)[1] >= w_low for c in durable if c is not winner):
            wrong += 1
    totals["plus_minus_over_100"] += len(over)
    totals["winners_named"] += named
    totals["winners_from_overlap"] += wrong
    totals["undecided"] += undecided
    print(f"run {i}: ± above 100%: {len(over)}, winners named: {named} (from overlapping intervals: {wrong}), "
          f"undecided: {undecided}, widest interval: up to ×{widest:.1f} the rate")
print("total:", ", ".join(f"{k} {v}" for k, v in totals.items()))
