#!/usr/bin/env python3
"""Summarize bench/lab_calibration.sh: per binary and profile, the 8 KiB fdatasync p50 against the model's
charge plus the stack's own cost (`zero`'s p50 with the same binary), median (range) over rounds."""
import json
import re
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
NAME = re.compile(r"(run|stats|commit)_(.+?)_(.+)_(\d+)\.json")


def fdatasync_8k(doc):
    """The 8 KiB fdatasync overwrite of `one_write` in a `run --json` document."""
    cases = [r for r in doc["results"] if r["method"] == "fdatasync" and r["write_size_bytes"] == 8192
             and r.get("error") is None and r["ops"] > 0]
    cases.sort(key=lambda r: (r.get("section") != "one_write", r.get("file_state") != "overwrite"))
    return cases[0]


def spread(values, fmt="{:.0f}"):
    if not values:
        return "—"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


docs = {}
for path in sorted(out.glob("*.json")):
    m = NAME.fullmatch(path.name)
    if m:
        kind, binary, profile, rnd = m.groups()
        docs.setdefault((kind, binary, profile), {})[int(rnd)] = json.loads(path.read_text())
binaries = sorted({b for (_, b, _) in docs}, key=lambda b: (b != "before", b))
profiles = [p for p in ["zero", "nvme-plp", "ssd-200us", "hdd-7200"] if any(k[2] == p for k in docs)]

print("| profile | build | rounds | fdatasync p50 µs | model's charge µs (write + flush p50) "
      "| expected = charge + zero's p50 | measured ÷ expected | replies late p50 / p90 µs |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for profile in profiles:
    for b in binaries:
        runs = docs.get(("run", b, profile), {})
        stats = docs.get(("stats", b, profile), {})
        zero = [fdatasync_8k(d)["latency_ns"]["p50"] / 1e3 for d in docs.get(("run", b, "zero"), {}).values()]
        p50 = [fdatasync_8k(d)["latency_ns"]["p50"] / 1e3 for d in runs.values()]
        if not p50:
            continue
        dev = [s["device"] for s in stats.values()]
        charge = statistics.median([(d["write_latency_ns"]["p50"] + d["flush_latency_ns"]["p50"]) / 1e3 for d in dev])
        late50 = [d.get("reply_late_ns", {}).get("p50", 0) / 1e3 for d in dev]
        late90 = [d.get("reply_late_ns", {}).get("p90", 0) / 1e3 for d in dev]
        late = f"{statistics.median(late50):.0f} / {statistics.median(late90):.0f}" if any(late90) else "not recorded"
        if profile == "zero" or not zero:
            print(f"| {profile} | {b} | {len(p50)} | {spread(p50)} | {charge:.0f} | — | — | {late} |")
            continue
        expected = charge + statistics.median(zero)
        ratios = [v / expected for v in p50]
        print(f"| {profile} | {b} | {len(p50)} | {spread(p50)} | {charge:.0f} | {expected:.0f} "
              f"| {spread(ratios, '{:.2f}')} | {late} |")

commits = [(b, docs[("commit", b, "hdd-7200")]) for b in binaries if ("commit", b, "hdd-7200") in docs]
if commits:
    print("\n| hdd-7200 commit | build | 1 client /s | 16 clients /s | 16 ÷ 1 | commits per flush at 16 |")
    print("|---|---|---:|---:|---:|---:|")
    for b, rounds in commits:
        one, sixteen, ratio, per = [], [], [], []
        for d in rounds.values():
            pts = {p["clients"]: p for p in d["commit"]["points"] if p.get("group_commit", True)}
            one.append(pts[1]["commits_per_s"])
            sixteen.append(pts[16]["commits_per_s"])
            ratio.append(pts[16]["commits_per_s"] / pts[1]["commits_per_s"])
            per.append(pts[16]["commits_per_sync"])
        print(f"| | {b} | {spread(one)} | {spread(sixteen)} | {spread(ratio, '{:.1f}')} | {spread(per, '{:.2f}')} |")
