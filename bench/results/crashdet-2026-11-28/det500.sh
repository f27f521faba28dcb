#!/usr/bin/env bash
# 3 runs side by side of each mode × profile at 500 points, seed 1; compares the JSON without wall-clock fields.
BIN=$1; OUT=$2; mkdir -p $OUT
for mode in wal fpw dw atomic none; do for profile in strict ext4; do
  for i in 1 2 3; do nice $BIN crashtest --mode $mode --profile $profile --points 500 --seed 1 --json $OUT/$mode-$profile-$i.json >/dev/null 2>&1 & done; wait
  sums=$(for i in 1 2 3; do python3 "$(dirname "$0")"/strip.py $OUT/$mode-$profile-$i.json | md5sum | cut -c1-8; done | sort -u | wc -l)
  passed=$(python3 -c "import json;c=json.load(open('$OUT/$mode-$profile-1.json'))['crashtest'];print(c['passed'], c['coverage']['commits_overlapping_flush'], c['duration_s'])")
  echo "$mode $profile: distinct JSONs over 3 runs: $sums; passed/overlaps/secs of run 1: $passed"
done; done
