#!/usr/bin/env python3
"""Issue #23: the markdown table of a bench/pages_dw_design.py raw file (median and range over rounds;
"vs fpw" is the per-round ratio), with the counters that say why one design wins: WAL bytes, page bytes
(home + double-write) and syncs per transaction, evictions that waited for a double-write, double-write
syncs per transaction, pages spooled ahead and spooled again before use, and what the data's disk wrote
per transaction (its /sys/block stat, over the whole row; on two devices, the first disk listed).

Usage: bench/pages_dw_table.py RAW.jsonl [LABEL]
"""

import json
import statistics
import sys


def disk_kib(rows):
    """Median over rounds of the bytes the row's first disk wrote per commit, in KiB ("-" if not measured)."""
    per = []
    for r in rows:
        dev = r.get("device") or {}
        disks = dev.get("devices") or []
        if dev.get("commits") and disks and disks[0].get("stat"):
            per.append(disks[0]["stat"]["write_bytes"] / dev["commits"] / 1024)
    return f"{statistics.median(per):.1f}" if per else "-"


def print_table(raw, label=""):
    """Print the table of raw file `raw` (one JSON line per round), its rows labelled `label`."""
    rows, pools, loads = {}, [], {}
    for line in open(raw):
        doc = json.loads(line)
        if doc["pool"] not in pools:
            pools.append(doc["pool"])
        loads.setdefault(doc["pool"], []).append(doc.get("loadavg_1min", "?"))
        for row in doc["pages"] if "pages" in doc else doc["rows"]:
            name = row["mode"] if row["mode"] != "dw" else "dw-" + row["dw_design"]
            rows.setdefault((doc["pool"], name), []).append(row)
    print("| devices | pool | row | tps median (range) | vs fpw median (range) | WAL B/txn | page KiB/txn | syncs/txn "
          "| ev. waited for dw | dw syncs/txn | pages spooled ahead | spooled again | disk KiB/txn |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for pool in pools:
        fpw = [r["tps"] for r in rows[(pool, "fpw")]]
        for name in ["fpw", "dw-2012", "dw-pipelined"]:
            rs = rows[(pool, name)]
            tps = [r["tps"] for r in rs]
            ratio = [t / f for t, f in zip(tps, fpw)]
            med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
            print(f"| {label} | {pool} | {name} | {statistics.median(tps):,.0f} ({min(tps):,.0f}–{max(tps):,.0f}) "
                  f"| {statistics.median(ratio):.2f} ({min(ratio):.2f}–{max(ratio):.2f}) "
                  f"| {med('wal_bytes_per_txn'):,.0f} | {med('data_bytes_per_txn') / 1024:.1f} "
                  f"| {med('fsyncs_per_txn'):.3f} | {med('evictions_waited_for_dw'):,.0f} "
                  f"| {med('dw_syncs_per_txn'):.3f} | {med('dw_pages_written_ahead'):,.0f} "
                  f"| {med('dw_pages_rewritten_before_eviction'):,.0f} | {disk_kib(rs)} |")
    for pool in pools:
        print(f"<!-- {label} {pool} load average (1 min, before-after each round): {', '.join(loads[pool])} -->")


def main():
    print_table(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")


if __name__ == "__main__":
    main()
