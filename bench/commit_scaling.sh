#!/usr/bin/env bash
# Issue #4's scaling goal, side by side: 16 clients vs 1 client of the reference log, alternating rounds so
# the device's drift hits both alike. Each round: 1 client; 16 clients; 16 clients with a commit delay that
# ends as soon as all 16 commits wait (`--commit-delay-us DELAY --commit-delay-count clients`).
# Runs under PRIO (default `chrt -f 10`, as bench/commit.sh). Target: 16 clients >= 8x one client.
# Usage: bench/commit_scaling.sh [DIR]   env: ROUNDS (default 5), SECS per point (default 3), DELAY (100)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp}
rounds=${ROUNDS:-5}
secs=${SECS:-3}
delay=${DELAY:-100}
PRIO=${PRIO-chrt -f 10}
cargo build --release -q -p syncbench
bin=$PWD/target/release/syncbench
point() { $PRIO "$bin" commit "$dir" --secs "$secs" --csv - "$@" 2>/dev/null | tail -1; }
echo "dir: $dir ($(findmnt -no FSTYPE --target "$dir")), $(nproc) cores, $(uname -r), $secs s per point, load average: $(cut -d" " -f1-3 /proc/loadavg)"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for i in $(seq "$rounds"); do
  one=$(point --clients 1)
  sixteen=$(point --clients 16)
  gathered=$(point --clients 16 --commit-delay-us "$delay" --commit-delay-count clients)
  echo "$i,$one" >>"$rows"; echo "$i,$sixteen" >>"$rows"; echo "$i,$gathered" >>"$rows"
done
python3 - "$rows" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
# columns: round, then syncbench commit's CSV: method,record_size_bytes,clients,commit_delay_us,commit_delay_count,...
print("round  clients  delay_us  until  commits_per_s  commits_per_sync  sync_us  ratio_to_1_client")
ratios = {"16": [], "16 gathered": []}
for i in range(0, len(rows), 3):
    one = float(rows[i][8])
    for r, label in ((rows[i], None), (rows[i + 1], "16"), (rows[i + 2], "16 gathered")):
        rate = float(r[8])
        ratio = rate / one
        if label:
            ratios[label].append(ratio)
        print(f"{r[0]:>5}  {r[3]:>7}  {r[4]:>8}  {r[5]:>5}  {rate:13.0f}  {float(r[10]):16.2f}  {float(r[11])/1000:7.0f}  {ratio:17.2f}")
print()
for label, rs in ratios.items():
    print(f"{label} clients / 1 client: median {statistics.median(rs):.2f}x (min {min(rs):.2f}, max {max(rs):.2f}, n={len(rs)}); target >= 8x")
PY
