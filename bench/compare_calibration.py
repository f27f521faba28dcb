#!/usr/bin/env python3
"""compare on the runs of a calibration directory (bench/calibrate_uncertainty.sh): for every pair of quiet
runs, the share of shared cases `compare` reports beyond noise (target: none in >= 95% of cases), and for
every (quiet, disturbed) pair whether it says "environment changed".
Usage: compare_calibration.py BIN OUT RUNS "DISTURBED" """
import itertools, json, subprocess, sys

binary, out, runs, disturbed = sys.argv[1], sys.argv[2], int(sys.argv[3]), set(map(int, sys.argv[4].split()))
quiet = [i for i in range(1, runs + 1) if i not in disturbed]

def compare(a, b):
    p = subprocess.run([binary, "compare", f"{out}/run{a}.json", f"{out}/run{b}.json", "--json", "-"],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)

beyond = total = not_compared = 0
print("quiet pairs: cases beyond noise / shared cases, headline")
for a, b in itertools.combinations(quiet, 2):
    c = compare(a, b)
    s = c["summaries"][0]
    n = s["faster"] + s["slower"] + s["within_noise"] + s.get("disturbed", 0)
    beyond += s["faster"] + s["slower"]
    not_compared += s.get("disturbed", 0)
    total += n
    print(f"  run{a} vs run{b}: {s['faster'] + s['slower']}/{n} (not compared, disturbed: {s.get('disturbed', 0)})"
          f"  {s.get('headline', '')}"
          + ("  [environment changed]" if c.get("environment_changed") else ""))
print(f"quiet pairs: {beyond}/{total} cases beyond noise = {100 * beyond / max(total, 1):.1f}% "
      f"(target: within noise in >= 95%, i.e. beyond in <= 5%); of them not compared (a side a lower bound): "
      f"{not_compared}, beyond noise among the compared: {beyond}/{total - not_compared}")
said = pairs = 0
print("quiet vs disturbed: environment changed said?")
for a in quiet:
    for b in sorted(disturbed):
        c = compare(a, b)
        pairs += 1
        said += bool(c.get("environment_changed"))
        print(f"  run{a} vs run{b}: {'yes' if c.get('environment_changed') else 'NO'}  {'; '.join(c.get('environment_changed', []))[:150]}")
print(f"quiet vs disturbed: 'environment changed' in {said}/{pairs} pairs")
