#!/usr/bin/env python3
"""How wide run's 95% intervals are against the re-runs' real spread (issue #33, "interval width within 1.5x
of the re-runs' real spread"), from a bench/calibrate_uncertainty.sh output directory (run1.json … run10.json):
for every run and case, the log-distance from its rate to the other runs' median over the printed interval's
log-width on that side; prints the factor the printed widths would need to cover exactly 95% (1.0 = as
wide as the spread; 0.5 = twice too wide; 2 = half as wide as needed).
Usage: python3 bench/interval_width.py OUT_DIR"""
import json,glob,statistics,math,sys
d=sys.argv[1]
runs=[json.load(open(f"{d}/run{i}.json")) for i in range(1,11)]
def key(c): return (c['section'],c['label'])
ratios=[]
for i,r in enumerate(runs):
    for c in r['results']:
        if not c.get('ops'): continue
        others=[x['ops_per_s'] for j,o in enumerate(runs) if j!=i for x in o['results'] if key(x)==key(c) and x.get('ops')]
        med=statistics.median(others)
        lo=c.get('ops_per_s_low'); hi=c.get('ops_per_s_high'); v=c['ops_per_s']
        if med>=v:
            rep=math.log(hi/v) if hi else float('inf'); need=math.log(med/v)
        else:
            rep=math.log(v/lo) if lo else float('inf'); need=math.log(v/med)
        if rep>0: ratios.append(need/rep)
ratios.sort(); n=len(ratios)
k=ratios[int(math.ceil(0.95*n))-1]
print(f"{n} intervals; scale that would cover exactly 95%: {k:.2f}x the printed width; covered as printed: {sum(1 for x in ratios if x<=1)}/{n}")
