#!/usr/bin/env bash
# Two builds of syncbench side by side on `pages`: ROUNDS rounds (3), the order of the builds swapped every
# round, each running `pages DIR --mode MODES --buffer-pool POOL --secs SECS --scale 10 --clients 8
# --checkpoint-secs 10 --dw-design DESIGNS`. Prints one line per mode and run: round, build, mode (dw with
# its design), tps, client evictions.
# usage: [ROUNDS=3] [SECS=20] [POOL=16MiB] [MODES=dw] [DESIGNS=2012] bash bench/pages_bin_ab.sh OLD_BIN NEW_BIN DIR
set -euo pipefail
[ $# -eq 3 ] && [ -x "$1" ] && [ -x "$2" ] && [ -d "$3" ] || {
  echo "usage: [ROUNDS=3] [SECS=20] [POOL=16MiB] [MODES=dw] [DESIGNS=2012] $0 OLD_BIN NEW_BIN DIR (two executables, an existing directory)" >&2
  exit 2
}
rounds=${ROUNDS:-3}; secs=${SECS:-20}; pool=${POOL:-16MiB}; modes=${MODES:-dw}; designs=${DESIGNS:-2012}
echo "# $(date -u '+%F %H:%M UTC'), pool $pool, modes $modes, designs $designs, ${secs}s, $rounds rounds; old $1, new $2"
for r in $(seq 1 "$rounds"); do
  order=(old new); [ $((r % 2)) = 0 ] && order=(new old)
  for which in "${order[@]}"; do
    bin=$1; [ "$which" = new ] && bin=$2
    "$bin" pages "$3" --mode "$modes" --buffer-pool "$pool" --secs "$secs" --scale 10 --clients 8 \
      --checkpoint-secs 10 --dw-design "$designs" --json - 2>/dev/null | python3 -c '
import json, sys
for row in json.load(sys.stdin)["pages"]["rows"]:
    mode = row["mode"] + ("-" + row["dw_design"] if row.get("dw_design") else "")
    print(sys.argv[1], sys.argv[2], mode, round(row["tps"]), "evictions", row["eviction_writes"])' "round $r" "$which"
  done
done
