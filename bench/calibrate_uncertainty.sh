#!/usr/bin/env bash
# Calibration of run's 95% intervals (issue #16): the same `run --sections a` RUNS times in one directory,
# with a background dd writer disturbing the same disk for a few seconds during some of them. For every
# run and case: does the reported interval (ops_per_s × (1 ± ci95_rel)) contain the median of the other
# runs' ops_per_s? The target is >= 90 %. Raw JSON of every run is kept in OUT.
# Usage: bench/calibrate_uncertainty.sh BIN DIR OUT   env: RUNS (default 10), DISTURB (run numbers, default "3 6 9"),
#        ARGS (extra run flags)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 BIN DIR OUT (BIN: a syncbench binary; DIR: a directory on the disk to test; OUT: for the raw JSON)"
bin_dir_out_args "$@"
runs=${RUNS:-10}
disturb=" ${DISTURB:-3 6 9} "
for i in $(seq "$runs"); do
  disturb_if_listed "$i"
  start=$(date +%s.%N)
  "$bin" run "$dir" --sections a ${ARGS:-} --json "$out/run$i.json" > "$out/run$i.txt" 2>&1 || echo "run $i exit $?"
  end=$(date +%s.%N)
  [[ -n $disturb_pid ]] && wait "$disturb_pid"
  printf "run %2d %s %.1f s\n" "$i" "$([[ -n $disturb_pid ]] && echo disturbed || echo quiet)" "$(echo "$end - $start" | bc)"
done
python3 "$(dirname "$0")/calibrate_uncertainty.py" "$out" "$runs" "$disturb"
