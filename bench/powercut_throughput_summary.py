#!/usr/bin/env python3
"""Summarise bench/powercut_throughput.sh's directory: per profile, `powercut write`'s records/s (all kinds,
and each kind while it was written) against `syncbench run`'s commits/s for the same writes on the same
lab disk, median (range) over the writer windows, and the ratios. Each writer window is compared with the
mean of the two runs around it (files P-rR-run-K-1.json, P-rR-write-K.txt, P-rR-run-K.json; the older
layout P-rR-run-a.json, P-rR-write.txt, P-rR-run-b.json is read too). `mix` is the writer's rate predicted
from run's cases and the writer's own new-file rate: per 17 records 8 overwrites at one_write's rate,
8 appends at file_state append's rate and 1 new file. `load` is the 1-minute load average at the start of
each lab disk's round. A second table compares median latencies (the writer's per record of a kind, run's
p50 per commit), which the stalls of a loaded machine drag far less than rates (1 / mean); its ratios are
run's median over the writer's, so 1.0 means the writer's record takes as long as run's commit.
Usage: bench/powercut_throughput_summary.py DIR"""
import glob
import json
import os
import re
import statistics
import sys

if len(sys.argv) != 2:
    sys.exit("usage: bench/powercut_throughput_summary.py DIR  (written by bench/powercut_throughput.sh)")
d = sys.argv[1]
LINE = re.compile(
    r"\(([0-9]+) records/s; each kind while it was written: ([0-9]+) overwrites/s, ([0-9]+) appends/s, ([0-9]+) new files/s"
)


MEDIANS = re.compile(r"median per record: overwrite ([0-9]+) µs, append ([0-9]+) µs, new file ([0-9]+) µs")


def run_cases(path, field):
    with open(path) as f:
        doc = json.load(f)
    values = {}
    for r in doc["results"]:
        key = r["section"] if r["section"] == "one_write" else r["section"] + ":" + r["file_state"]
        values[key] = r["ops_per_s"] if field == "rate" else r["latency_ns"]["p50"] / 1e3
    return values


def run_rates(path):
    return run_cases(path, "rate")


def windows():
    """(profile, writer output, run before, run after, load file) for every writer window."""
    for w in sorted(glob.glob(os.path.join(d, "*-r*-write*.txt"))):
        m = re.match(r"(.*)-r([0-9]+)-write(?:-([0-9]+))?\.txt$", os.path.basename(w))
        profile, rnd, k = m.group(1), m.group(2), m.group(3)
        stem = os.path.join(d, f"{profile}-r{rnd}")
        if k is None:
            before, after = stem + "-run-a.json", stem + "-run-b.json"
        else:
            before, after = f"{stem}-run-{int(k) - 1}.json", f"{stem}-run-{k}.json"
        yield profile, w, before, after, stem + "-load.txt"


def fmt(xs, digits=0):
    return f"{statistics.median(xs):.{digits}f} ({min(xs):.{digits}f}–{max(xs):.{digits}f})"


rows = {}
for profile, w, before, after, loadfile in windows():
    m = LINE.search(open(w).read())
    if not m or not os.path.exists(before) or not os.path.exists(after):
        print(f"skipped {w}: incomplete window", file=sys.stderr)
        continue
    total, ov, ap, nf = (float(x) for x in m.groups())
    a, b = run_rates(before), run_rates(after)
    run = {k: (a[k] + b[k]) / 2 for k in a if k in b}
    mix = 17 / (8 / run["one_write"] + 8 / run["file_state:append"] + 1 / nf)
    load = float(open(loadfile).read().split()[0]) if os.path.exists(loadfile) else float("nan")
    row = dict(total=total, ov=ov, ap=ap, nf=nf, one=run["one_write"], app=run["file_state:append"], mix=mix, load=load)
    med = MEDIANS.search(open(w).read())
    if med:
        a, b = run_cases(before, "p50"), run_cases(after, "p50")
        row.update(
            ov_us=float(med.group(1)), ap_us=float(med.group(2)), nf_us=float(med.group(3)),
            one_us=(a["one_write"] + b["one_write"]) / 2, app_us=(a["file_state:append"] + b["file_state:append"]) / 2,
        )
    rows.setdefault(profile, []).append(row)

print("| profile | windows | load | `run` one_write /s | `run` append /s | write records/s | ratio to one_write | "
      "predicted from run's mix /s | ratio to the mix | write overwrites/s | ratio to one_write | "
      "write appends/s | ratio to run append | write new files/s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for profile in sorted(rows):
    rs = rows[profile]
    col = lambda k: [r[k] for r in rs]
    rat = lambda x, y: fmt([r[x] / r[y] for r in rs], 2)
    print(f"| {profile} | {len(rs)} | {fmt(col('load'), 1)} | {fmt(col('one'))} | {fmt(col('app'))} | {fmt(col('total'))} | "
          f"{rat('total', 'one')} | {fmt(col('mix'))} | {rat('total', 'mix')} | {fmt(col('ov'))} | {rat('ov', 'one')} | "
          f"{fmt(col('ap'))} | {rat('ap', 'app')} | {fmt(col('nf'))} |")

medians = {p: [r for r in rs if "ov_us" in r] for p, rs in rows.items()}
if any(medians.values()):
    print()
    print("| profile | windows | `run` one_write p50 µs | write overwrite median µs | ratio | `run` append p50 µs | "
          "write append median µs | ratio | write new file median µs |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for profile in sorted(medians):
        rs = medians[profile]
        if not rs:
            continue
        col = lambda k: [r[k] for r in rs]
        rat = lambda x, y: fmt([r[x] / r[y] for r in rs], 2)
        print(f"| {profile} | {len(rs)} | {fmt(col('one_us'))} | {fmt(col('ov_us'))} | {rat('one_us', 'ov_us')} | "
              f"{fmt(col('app_us'))} | {fmt(col('ap_us'))} | {rat('app_us', 'ap_us')} | {fmt(col('nf_us'))} |")
