#!/usr/bin/env bash
# Calibration of run's 95% intervals (issue #16): the same `run --sections a` RUNS times in one directory,
# with a background dd writer disturbing the same disk for a few seconds during some of them. For every
# run and case: does the reported interval (ops_per_s × (1 ± ci95_rel)) contain the median of the other
# runs' ops_per_s? The target is >= 90 %. Raw JSON of every run is kept in OUT.
# Usage: bench/calibrate_uncertainty.sh BIN DIR OUT   env: RUNS (default 10), DISTURB (run numbers, default "3 6 9"),
#        ARGS (extra run flags)
set -euo pipefail
bin=$1 dir=$2 out=$3
runs=${RUNS:-10}
disturb=" ${DISTURB:-3 6 9} "
mkdir -p "$out"
echo "bin: $bin ($("$bin" --version))  dir: $dir  load: $(cut -d' ' -f1-3 /proc/loadavg)  date: $(date -u +%FT%TZ)"
for i in $(seq "$runs"); do
  pid=
  if [[ $disturb == *" $i "* ]]; then
    # A writer of 64 KiB O_DSYNC writes for ~4 s starting 1 s into the run: flushes not ours, mid-run.
    ( sleep 1; timeout 4 dd if=/dev/zero of="$dir/.calib-dd" bs=64k count=100000 oflag=dsync status=none || true
      rm -f "$dir/.calib-dd" ) &
    pid=$!
  fi
  start=$(date +%s.%N)
  "$bin" run "$dir" --sections a ${ARGS:-} --json "$out/run$i.json" > "$out/run$i.txt" 2>&1 || echo "run $i exit $?"
  end=$(date +%s.%N)
  [[ -n $pid ]] && wait "$pid"
  printf "run %2d %s %.1f s\n" "$i" "$([[ -n $pid ]] && echo disturbed || echo quiet)" "$(echo "$end - $start" | bc)"
done
python3 "$(dirname "$0")/calibrate_uncertainty.py" "$out" "$runs" "$disturb"
