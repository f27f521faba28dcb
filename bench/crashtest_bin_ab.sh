#!/usr/bin/env bash
# Two builds of syncbench side by side on `crashtest`: ROUNDS rounds (5), the order of the builds swapped
# every round, each running `crashtest --mode MODE --points POINTS --seed SEED [--dw-design DESIGN]` for
# each configuration of CONFIGS (default "dw dw:pipelined fpw"; MODE:DESIGN picks a double-write
# design). Prints one line per configuration and run: round, build, configuration, cycles per minute;
# then the median and range per configuration and build.
# usage: [ROUNDS=5] [POINTS=300] [SEED=1] [CONFIGS="dw dw:pipelined fpw"] bash bench/crashtest_bin_ab.sh OLD_BIN NEW_BIN
set -euo pipefail
[ $# -eq 2 ] && [ -x "$1" ] && [ -x "$2" ] || {
  echo "usage: [ROUNDS=5] [POINTS=300] [SEED=1] [CONFIGS=\"dw dw:pipelined fpw\"] $0 OLD_BIN NEW_BIN (two executables)" >&2
  exit 2
}
rounds=${ROUNDS:-5}; points=${POINTS:-300}; seed=${SEED:-1}; configs=${CONFIGS:-dw dw:pipelined fpw}
echo "# $(date -u '+%F %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $points points, seed $seed, $rounds rounds; old $1, new $2"
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for r in $(seq 1 "$rounds"); do
  order=(old new); [ $((r % 2)) = 0 ] && order=(new old)
  for config in $configs; do
    mode=${config%%:*}; design=; [ "$config" != "$mode" ] && design=${config#*:}
    for which in "${order[@]}"; do
      bin=$1; [ "$which" = new ] && bin=$2
      line=$("$bin" crashtest --mode "$mode" ${design:+--dw-design "$design"} --points "$points" --seed "$seed" 2>&1 | tail -1)
      cpm=$(grep -o '[0-9]* crash-and-recover cycles/min' <<<"$line" | cut -d' ' -f1)
      [ -n "$cpm" ] || { echo "round $r $which $config: no cycles/min in: $line" >&2; exit 1; }
      echo "round $r $which $config $cpm" | tee -a "$runs"
    done
  done
done
python3 - "$runs" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    _, _, which, config, cpm = line.split()
    rows.setdefault((config, which), []).append(int(cpm))
for (config, which), v in sorted(rows.items()):
    print(f"{config:14} {which}: median {statistics.median(v):.0f} cycles/min, range {min(v)}-{max(v)} ({len(v)} runs)")
PY
