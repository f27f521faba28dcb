#!/usr/bin/env python3
"""Issue #23: the two double-write designs side by side with full-page writes. Each round runs
`syncbench pages DIR --mode fpw,dw --dw-design 2012,pipelined` for one pool size, with the order of
the three rows reversed every other round; per round it records each row's tps, WAL bytes per
transaction and the double-write counters, and prints the median and range of dw/fpw tps ratios.

The seed table's shape (issue 23): --pools 16MiB,48MiB,256MiB is about 1/6, 1/2 and all of scale 10's
data; run once with everything on --dir and once with --extra "--wal-dir L --dw-dir L" on another device.

Usage: bench/pages_dw_design.py [--dir D] [--rounds N] [--secs 18] [--pools 16MiB,256MiB] [--scale 10]
       [--clients 8] [--label one] [--out bench/results/pages_dw_design-DATE.jsonl]
At the end it prints bench/pages_dw_table.py's table of the raw file.
"""

import argparse
import json
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ left behind by the import below
import pages_dw_table  # noqa: E402  the table printed at the end (bench/pages_dw_table.py, next to this script)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=5)
    # syncbench pages splits --secs over 3 rounds: 18 s makes each round (6 s) longer than the 5 s
    # --checkpoint-secs, so every row completes a checkpoint (with 8 s none does, and fpw's home writes
    # are never synced inside a round).
    ap.add_argument("--secs", type=int, default=18)
    ap.add_argument("--pools", default="16MiB,256MiB")
    ap.add_argument("--scale", default="10")
    ap.add_argument("--clients", default="8")
    ap.add_argument("--bin", default="target/release/syncbench")
    ap.add_argument("--extra", default="", help="more flags for syncbench pages, e.g. '--wal-dir /mnt'")
    ap.add_argument("--label", default="", help="the table's devices column, e.g. 'one'")
    ap.add_argument("--out", default=time.strftime("bench/results/pages_dw_design-%Y%m%dT%H%M%SZ.jsonl", time.gmtime()))
    a = ap.parse_args()
    print(f"dir {a.dir}, scale {a.scale}, {a.clients} clients, {a.rounds} rounds x {a.secs} s per row; raw: {a.out}")
    with open(a.out, "w") as raw:
        for pool in a.pools.split(","):
            for r in range(1, a.rounds + 1):
                order = (["--mode", "fpw,dw", "--dw-design", "2012,pipelined"] if r % 2
                         else ["--mode", "dw,fpw", "--dw-design", "pipelined,2012"])
                cmd = [a.bin, "pages", a.dir, *order, "--buffer-pool", pool, "--scale", a.scale,
                       "--clients", a.clients, "--secs", str(a.secs), *a.extra.split(), "--json", "-"]
                load_before = open("/proc/loadavg").read().split()[0]
                doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
                load = f"{load_before}-{open('/proc/loadavg').read().split()[0]}"
                raw.write(json.dumps({"pool": pool, "round": r, "loadavg_1min": load, "cmd": cmd,
                                      "rows": doc["pages"]["rows"]}) + "\n")
                raw.flush()
                rows = {}
                for row in doc["pages"]["rows"]:
                    name = row["mode"] if row["mode"] != "dw" else "dw-" + row["dw_design"]
                    rows[name] = row
                fpw = rows["fpw"]["tps"]
                print(f"{pool:>7} round {r} ({order[1]} {order[3]}): fpw {fpw:.0f}  "
                      f"2012 {rows['dw-2012']['tps']:.0f} ({rows['dw-2012']['tps'] / fpw:.2f})  "
                      f"pipelined {rows['dw-pipelined']['tps']:.0f} ({rows['dw-pipelined']['tps'] / fpw:.2f})  load {load}",
                      flush=True)
    print()
    pages_dw_table.print_table(a.out, a.label)


if __name__ == "__main__":
    main()
