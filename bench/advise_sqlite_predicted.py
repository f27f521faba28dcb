#!/usr/bin/env python3
"""advise's predicted SQLite commit rates against the measured ones (bench/advise_sqlite.sh).

usage: advise_sqlite_predicted.py RAW ADVICE_JSON
The prediction is the evidence behind advise's `synchronous` setting: a WAL commit with FULL costs one
4 KiB write + fdatasync (the fdatasync case's commits/s). In rollback-journal mode SQLite 3.40 on Linux
syncs 4 times per commit with FULL (journal, its directory, the journal header, the database) and 3 times
with NORMAL (traced with strace), so advise's cap there is the fdatasync rate divided by 4 and 3. WAL with
NORMAL syncs nothing per commit: advise predicts no rate for it (SQLite's own work sets it); the write-alone
rate it once gave is printed for the record. Ratio = measured median / predicted.
"""
import json
import statistics
import sys

raw, advice = sys.argv[1], sys.argv[2]
rates = {}
for line in open(raw):
    rnd, mode, sync, _threads, rate = line.split()
    rates.setdefault((mode, sync.split("=")[1]), []).append(float(rate))
doc = json.load(open(advice))
setting = [s for a in doc["advice"] for s in a["settings"] if s["name"] == "synchronous"][0]
ev = {e["method"]: e["ops_per_s"] for e in setting["evidence"]}
if "fdatasync" not in ev:
    sys.exit("advise gave no measured cost for synchronous (no fdatasync evidence)")
syncs = {("WAL", "FULL"): 1, ("DELETE", "FULL"): 4, ("DELETE", "NORMAL"): 3}
print("| journal_mode | synchronous | predicted commits/s | measured median (range) | measured / predicted |")
print("|---|---|---:|---:|---:|")
for (mode, sync), vals in sorted(rates.items(), key=lambda kv: (kv[0][0] != "WAL", kv[0][1])):
    if (mode, sync) in syncs:
        predicted = ev["fdatasync"] / syncs[(mode, sync)]
    elif "write" in ev:
        predicted = ev["write"]
        mode += " (write alone, not a prediction)"
    else:
        predicted = float("nan")
    med = statistics.median(vals)
    print(f"| {mode} | {sync} | {predicted:.0f} | {med:.0f} ({min(vals):.0f}-{max(vals):.0f}) | {med / predicted:.2f} |")
