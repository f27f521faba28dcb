"""Median and range per setting over paired rounds, the advised setting's share of the best, and the
per-round ratio advised/best. stdin: lines `GROUP SETTING v1 v2 ...` (one value per round, rounds in the
same order for every setting of a group). argv: ADVISED_SETTING UNIT. Used by bench/advise_*.sh.

A setting named `default2` is an A/A control: the default run a second time in every round. It never
counts as the best; the per-round ratios default/default2 are the noise between rounds of two identical
settings. The advised setting loses when its median is more than 5% below the best's AND its median
per-round ratio to the best is below the A/A floor, the lowest of min(r, 1/r) over the A/A ratios r
(further behind than the default ever was behind itself, either way round); without a control, when no
per-round ratio reaches 1."""
import statistics
import sys

chosen, unit = sys.argv[1], sys.argv[2]
groups = {}
for line in sys.stdin:
    g, s, *v = line.split()
    groups.setdefault(g, {})[s] = [float(x) for x in v]
for g, per in groups.items():
    med = {s: statistics.median(v) for s, v in per.items()}
    best = max((s for s in med if s != "default2"), key=med.get)
    print(f"{g}:")
    for s in sorted(med, key=med.get, reverse=True):
        mark = "   <- advised" if s == chosen else ("   (A/A control: the default again)" if s == "default2" else "")
        print(f"  {s:<20} {med[s]:10.1f} {unit}  {100 * med[s] / med[best]:5.1f}% of best  "
              f"(rounds {min(per[s]):.0f}-{max(per[s]):.0f}){mark}")
    if chosen not in per:
        print(f"  advised setting {chosen} was not among the candidates")
        continue
    ratios = [a / b for a, b in zip(per[chosen], per[best])]
    aa = sorted(a / b for a, b in zip(per["default"], per["default2"])) if "default2" in per else []
    if aa:
        print("  per round default/default2 (A/A noise): " + " ".join(f"{r:.3f}" for r in aa)
              + f" (median {statistics.median(aa):.3f})")
    floor = min(min(r, 1 / r) for r in aa) if aa else None
    within_noise = statistics.median(ratios) >= floor if aa else max(ratios) >= 1.0
    verdict = ("advised is the best" if chosen == best else "within 5%" if med[chosen] >= 0.95 * med[best]
               else "within the noise" if within_noise else "LOSES")
    rs = sorted(ratios)
    print(f"  per round {chosen}/{best}: " + " ".join(f"{r:.3f}" for r in rs)
          + f" (median {statistics.median(rs):.3f}); {verdict}")
    noise = f" aa={aa[0]:.3f}-{aa[-1]:.3f} aa_floor={floor:.3f}" if aa else ""
    print(f"SUMMARY {g} advised={chosen} best={best} ratio={med[chosen] / med[best]:.3f} "
          f"round_ratios={rs[0]:.3f}-{rs[-1]:.3f}{noise} {verdict.replace(' ', '_')}")
