#!/usr/bin/env python3
"""Advise's pick against the measured best, per workload, from alternating rounds.

usage: advise_summary.py RAW ADVISED
RAW: lines `round setting workload threads rate` (every round runs every setting: rounds are paired).
Per workload: each setting's median rate and range over the rounds, the advised setting's median against
the best median (the ratio), and the per-round ratio advised/best. A cell passes when the ratio of the
medians is at least 0.95, or when the per-round ratios reach 1.0 (in some round the advised setting was at
least as fast as the best: the difference is inside the noise between rounds).
"""
import statistics
import sys

raw, advised = sys.argv[1], sys.argv[2]
rows = {}
for line in open(raw):
    parts = line.split()
    if len(parts) != 5:
        continue
    rnd, setting, workload, threads, rate = parts
    rows.setdefault((workload, int(threads)), {}).setdefault(setting, {})[int(rnd)] = float(rate)

print(f"advise chose: {advised}")
print("| workload | threads | advised | measured best | ratio (medians) | per-round ratio | verdict |")
print("|---|---:|---|---|---:|---|---|")
details = []
for (workload, threads), per in sorted(rows.items()):
    med = {s: statistics.median(r.values()) for s, r in per.items()}
    best = max(med, key=med.get)
    details.append(f"{workload} {threads} thread(s):")
    for s in sorted(med, key=med.get, reverse=True):
        vals = per[s].values()
        mark = "  <- advised" if s == advised else ""
        details.append(f"  {s:<18} {med[s]:9.1f}/s  {100 * med[s] / med[best]:5.1f}% of best  (rounds {min(vals):.1f}-{max(vals):.1f}){mark}")
    if advised not in per:
        print(f"| {workload} | {threads} | {advised} (not measured) | {best} | - | - | - |")
        continue
    ratio = med[advised] / med[best]
    rounds = sorted(set(per[advised]) & set(per[best]))
    per_round = [per[advised][r] / per[best][r] for r in rounds]
    lo, hi = min(per_round), max(per_round)
    verdict = "within 5%" if ratio >= 0.95 else ("within noise" if hi >= 1.0 else "LOSES")
    print(f"| {workload} | {threads} | {advised} {med[advised]:.1f}/s | {best} {med[best]:.1f}/s | {ratio:.3f} | {lo:.3f}-{hi:.3f} | {verdict} |")
print()
print("\n".join(details))
