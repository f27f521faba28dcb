#!/usr/bin/env bash
# Issue #33's acceptance for readable intervals: RUNS times `run --quick` in DIR while another build loads the
# machine (a scratch copy of this repository built with `nice cargo build --release` in its own target dir,
# started before the first run and stopped after the last). Then counts, over every run's text output, the
# printed ± above 100% and the winners named where the 95% intervals overlap (from each run's JSON).
# Raw text and JSON of every run are kept in OUT.
# Usage: bench/intervals_under_load.sh BIN DIR OUT   env: RUNS (default 5), LOAD (a command to run as the load
#        instead of the build; "none" for none)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 BIN DIR OUT (BIN: a syncbench binary; DIR: a directory on the disk to test; OUT: for the raw output)"
bin_dir_out_args "$@"
exit_on_signals
runs=${RUNS:-5}
scratch=$(mktemp -d /tmp/intervals-load.XXXXXX)
load_pid=
cleanup() {
  [[ -n $load_pid ]] && kill -- -"$load_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
if [[ ${LOAD:-} != none ]]; then
  git -C "$repo" archive HEAD | tar -x -C "$scratch"
  # Its own process group, so that cleanup stops cargo and every rustc it started.
  setsid bash -c "cd '$scratch' && ${LOAD:-CARGO_TARGET_DIR='$scratch/target' nice cargo build --release -q} >/dev/null 2>&1" &
  load_pid=$!
  sleep 20 # let the build reach its compiling phase
fi
for i in $(seq "$runs"); do
  running=$([[ -n $load_pid ]] && kill -0 "$load_pid" 2>/dev/null && echo "build running" || echo "no load")
  "$bin" run "$dir" --quick --json "$out/run$i.json" > "$out/run$i.txt" 2>&1 || echo "run $i exit $?"
  echo "run $i: $running, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
python3 "$(dirname "$0")/intervals_under_load.py" "$out" "$runs"
