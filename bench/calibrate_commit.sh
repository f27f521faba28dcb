#!/usr/bin/env bash
# Calibration of commit's one-client point (issue #16): `syncbench commit DIR --clients 1` RUNS times, a dd
# writer disturbing the same disk during some runs (as bench/calibrate_uncertainty.sh); does each run's
# interval (commits_per_s × (1 ± ci95_rel)) contain the median of the other runs? Raw JSON in OUT.
# Usage: bench/calibrate_commit.sh BIN DIR OUT   env: RUNS (default 10), DISTURB (default "3 6 9")
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 BIN DIR OUT (BIN: a syncbench binary; DIR: a directory on the disk to test; OUT: for the raw JSON)"
bin_dir_out_args "$@"
runs=${RUNS:-10}
disturb=" ${DISTURB:-3 6 9} "
for i in $(seq "$runs"); do
  disturb_if_listed "$i"
  "$bin" commit "$dir" --clients 1 --json "$out/commit$i.json" > "$out/commit$i.txt" 2>&1 || echo "commit $i exit $?"
  [[ -n $disturb_pid ]] && wait "$disturb_pid"
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
pts = [json.load(open(f"{out}/commit{i}.json"))["commit"]["points"][0] for i in range(1, runs + 1)]
hits = 0
for i, p in enumerate(pts):
    med = statistics.median(q["commits_per_s"] for j, q in enumerate(pts) if j != i)
    ci = p.get("ci95_rel") or 0.0
    ok = p["commits_per_s"] * (1 - ci) <= med <= p["commits_per_s"] * (1 + ci)
    hits += ok
    print(f"run {i+1:2}: {p['commits_per_s']:8.0f}/s ±{100*ci:5.1f}%  rounds {[round(x) for x in p.get('rounds_commits_per_s', [])]}  others' median {med:.0f}  {'ok' if ok else 'MISS'}")
print(f"coverage: {hits}/{runs} (target >= 90%)")
PY
