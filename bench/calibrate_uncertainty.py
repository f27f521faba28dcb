#!/usr/bin/env python3
"""Coverage of run's 95% intervals: for each run and case, whether its interval — [ops_per_s_low,
ops_per_s_high] when the file has them (no high end: open upwards, the lower bound of a disturbed case), else
ops_per_s × (1 ± ci95_rel) — contains the median ops_per_s of the other runs. Usage: calibrate_uncertainty.py OUT RUNS "DISTURBED"."""
import json, statistics, sys

out, runs, disturbed = sys.argv[1], int(sys.argv[2]), set(map(int, sys.argv[3].split()))
docs = {i: json.load(open(f"{out}/run{i}.json")) for i in range(1, runs + 1)}
def key(r):
    return (r["section"], r["label"])
def measured(r):
    return r["supported"] and not r.get("error") and r["ops"] > 0
cases = sorted({key(r) for d in docs.values() for r in d["results"] if measured(r)})
hits = total = 0
per_run = {}
widths = []
print(f"{'case':32} " + " ".join(f"{i:>5}" for i in docs) + "  median  ci95 (median of runs)")
for case in cases:
    vals = {i: r for i, d in docs.items() for r in d["results"] if key(r) == case and measured(r)}
    row = []
    for i, r in vals.items():
        others = [o["ops_per_s"] for j, o in vals.items() if j != i]
        if not others:
            continue
        med = statistics.median(others)
        if r.get("ops_per_s_low") is not None:
            lo = r["ops_per_s_low"]
            hi = r["ops_per_s_high"] if r.get("ops_per_s_high") is not None else float("inf")
        else:
            lo, hi = r["ops_per_s"] * (1 - r["ci95_rel"]), r["ops_per_s"] * (1 + r["ci95_rel"])
        ok = lo <= med <= hi
        hits += ok
        total += 1
        per_run.setdefault(i, [0, 0])
        per_run[i][0] += ok
        per_run[i][1] += 1
        row.append(f"{'  ok ' if ok else ' MISS'}")
        widths.append(r["ci95_rel"])
    allv = [r["ops_per_s"] for r in vals.values()]
    cis = [r["ci95_rel"] for r in vals.values()]
    print(f"{' '.join(case)[:32]:32} " + " ".join(row) + f"  {statistics.median(allv):7.0f}  ±{100*statistics.median(cis):.1f}%")
print()
for i, (h, n) in sorted(per_run.items()):
    d = docs[i]
    dist = [r.get("disturbances", []) for r in d["results"]]
    named = sum(1 for x in dist if x)
    bounds = sum(1 for r in d["results"] if r.get("lower_bound"))
    rounds = max((len(r.get("rounds_ops_per_s", [])) for r in d["results"]), default=0)
    print(f"run {i:2} {'disturbed' if i in disturbed else 'quiet    '}: {h}/{n} intervals contain the others' median"
          f"; cases with a disturbance named: {named}, lower bounds: {bounds}; rounds: {rounds}")
print(f"\ncoverage: {hits}/{total} = {100*hits/max(total,1):.1f}% (target >= 90%); median ci95_rel {100*statistics.median(widths):.1f}%")
