#!/usr/bin/env bash
# advise on the same directory N times (issue #16 acceptance): the same pick for every setting, and
# commit_delay within a factor of 1.5. Raw JSON of every run in OUT.
# Usage: bench/advise_repeat.sh BIN DIR OUT   env: N (default 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 BIN DIR OUT (BIN: a syncbench binary; DIR: the directory to advise on; OUT: for the raw JSON)"
bin_dir_out_args "$@"
n=${N:-5}
for i in $(seq "$n"); do
  start=$(date +%s.%N)
  SYNCBENCH_NO_VERSION_DETECT=1 "$bin" advise "$dir" --json "$out/advise$i.json" > "$out/advise$i.txt" 2>&1 || echo "advise $i exit $?"
  printf "advise %d: %.1f s\n" "$i" "$(echo "$(date +%s.%N) - $start" | bc)"
done
python3 - "$out" "$n" <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{out}/advise{i}.json")) for i in range(1, n + 1)]
picks = {}
for r in runs:
    for a in r["advice"]:
        for s in a["settings"]:
            picks.setdefault((a["database"], s["name"]), []).append(s["value"])
        if a.get("pass") is not None:
            picks.setdefault((a["database"], "pass"), []).append(str(a["pass"]))
same = 0
for (db, name), values in sorted(picks.items()):
    if name == "commit_delay":
        v = [float(x) for x in values]
        print(f"{db:9} {name:34} {values}  max/min = {max(v)/min(v):.2f} (target <= 1.5)")
        continue
    ok = len(set(values)) == 1
    same += ok
    print(f"{db:9} {name:34} {values}{'' if ok else '   DIFFERS'}")
print(f"settings with the same pick in all {n} runs: {same}/{len(picks) - 1} (commit_delay listed separately)")
PY
