#!/usr/bin/env bash
# Wall times of the commands the README times: `run`, `run --quick`, `advise`, `advise --quick`, each
# ROUNDS times (default 3), the commands alternated within every round so a slow minute of the machine
# hits all of them alike. One line per command and round (seconds, exit code, load average at the start),
# then per command the median and range. The binary is copied first, so a rebuild meanwhile changes nothing.
#
# usage: bench/command_timings.sh DIR [ROUNDS] [BIN]
set -euo pipefail
usage="usage: bench/command_timings.sh DIR [ROUNDS] [BIN]"
. "$(dirname "$0")/lib.sh"
need_dir "${1:-}"
dir=$1 rounds=${2:-3}
release_bin "${3:-}"
exit_on_signals
copy=$(mktemp /var/tmp/syncbench-timings-XXXXXX)
trap 'rm -f "$copy"' EXIT
cp "$bin" "$copy"
chmod 755 "$copy"
echo "bin: $bin ($("$copy" --version))  dir: $dir  rounds: $rounds  nproc: $(nproc)  date: $(date -u +%FT%TZ)"
commands=("run" "run --quick" "advise" "advise --quick")
declare -A times
for round in $(seq 1 "$rounds"); do
  for cmd in "${commands[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    set +e
    # shellcheck disable=SC2086 # the command's words split on purpose
    "$copy" $cmd "$dir" >/dev/null 2>&1
    code=$?
    set -e
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    printf 'round %d  %-15s %7.1f s  exit %d  load %s\n' "$round" "$cmd" "$secs" "$code" "$load"
    times[$cmd]="${times[$cmd]:-} $secs"
  done
done
for cmd in "${commands[@]}"; do
  # shellcheck disable=SC2086
  printf '%s\n' ${times[$cmd]} | sort -n | awk -v cmd="$cmd" '
    { v[NR] = $1 }
    END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "%-15s median %.1f s  range %.1f–%.1f s  (%d rounds)\n", cmd, m, v[1], v[NR], NR }'
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)  date: $(date -u +%FT%TZ)"
