#!/usr/bin/env python3
"""Pool the "round N method M clients C tps T" lines of several bench/advise_pgbench.sh outputs: median tps
per method and client count, percent of the best, and fdatasync/best per round (paired within each file).
usage: python3 bench/pgbench_rounds_pooled.py RESULT.txt [RESULT.txt ...]"""
import re
import statistics
import sys

if len(sys.argv) < 2:
    sys.exit(print(__doc__.splitlines()[-1], file=sys.stderr) or 2)
rows = {}
for path in sys.argv[1:]:
    try:
        text = open(path).read()
    except OSError as e:
        sys.exit(print(f"cannot read {path}: {e.strerror}", file=sys.stderr) or 2)
    for line in text.splitlines():
        m = re.match(r"round (\d+) method (\S+) clients (\d+) tps ([\d.]+)", line)
        if m:
            rows.setdefault(m[3], {}).setdefault(m[2], []).append(float(m[4]))
for clients, per in rows.items():
    med = {k: statistics.median(v) for k, v in per.items()}
    best = max(med, key=med.get)
    ranked = sorted(med, key=med.get, reverse=True)
    print(f"clients {clients} (n={len(per[best])}): "
          + "  ".join(f"{k} {med[k]:.0f} ({100 * med[k] / med[best]:.1f}%)" for k in ranked))
    if best != "fdatasync" and "fdatasync" in per:
        ratios = sorted(a / b for a, b in zip(per["fdatasync"], per[best]))
        print(f"   fdatasync/{best} " + " ".join(f"{x:.3f}" for x in ratios)
              + f" median {statistics.median(ratios):.3f}")
if not rows:
    sys.exit(print("no 'round N method M clients C tps T' lines in " + " ".join(sys.argv[1:]), file=sys.stderr) or 2)
