#!/usr/bin/env python3
"""Every cell of `powercut db` JSON files (bench/powercut_db.sh's OUT/*.json) as one Markdown table, and the
totals: honest cuts (cells where no loss is expected) with their damage, and each negative control's rate.
Usage: bench/powercut_db_summary.py FILE.json..."""
import json
import statistics
import sys


def damaged(cut):
    v = cut.get("verification") or {}
    broken = (v.get("foreign_rows", 0) + v.get("garbled_rows", 0) + v.get("duplicate_rows", 0)
              + v.get("accounts_inconsistent", 0) + v.get("acks_not_issued", 0)) > 0 or v.get("balance_sum_off_by", 0) != 0
    integrity = cut.get("read_error") is not None or (cut.get("integrity") or {}).get("ok") is False
    return v.get("lost", 0) > 0 or cut.get("recovery_failure") is not None or integrity or broken


def main(paths):
    cells = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        cells += [dict(c, partial=doc.get("partial", False)) for c in doc["cells"]]
    print("| version | settings | profile | fs | cuts | acknowledged | lost | failed recoveries | integrity failures "
          "| damaged cuts | restart ms (median) | cuts/min | expected loss |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    honest = [0, 0, 0]  # cuts, damaged, acknowledged
    for c in cells:
        cuts = c["cuts"]
        n, bad = len(cuts), sum(damaged(x) for x in cuts)
        acked = sum(x["acknowledged"] for x in cuts)
        lost = sum((x.get("verification") or {}).get("lost", 0) for x in cuts)
        failed = sum(x.get("recovery_failure") is not None for x in cuts)
        integ = sum(x.get("read_error") is not None or (x.get("integrity") or {}).get("ok") is False for x in cuts)
        restart = statistics.median([x["restart_ms"] for x in cuts]) if cuts else 0
        per_min = n * 60 / c["elapsed_s"] if c["elapsed_s"] else 0
        pct = f" ({100 * bad / n:.0f}%)" if n else ""
        expected = c.get("expected_loss") or ""
        print(f"| {c['version']} | {c['settings']} | {c['profile']} | {c['fs']} | {n} | {acked} | {lost} | {failed} "
              f"| {integ} | {bad}{pct} | {restart:.0f} | {per_min:.1f} | {expected} |")
        if not expected:
            honest[0] += n
            honest[1] += bad
            honest[2] += acked
    print()
    print(f"Cells where no loss is expected: {honest[0]} cuts, {honest[2]} acknowledged transfers, "
          f"{honest[1]} cuts with loss, failed recovery, integrity failure or broken invariant.")


if __name__ == "__main__":
    main(sys.argv[1:])
