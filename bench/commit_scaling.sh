#!/usr/bin/env bash
# Issue #4's scaling goal, side by side: 16 clients vs 1 client of the reference log (see commit_scaling.py).
# Usage: bench/commit_scaling.sh [DIR]   env: ROUNDS (default 5), SECS per point (3), DELAY (100 us),
#        BASE (an older syncbench binary to A/B against), PRIO (default `chrt -f 10`), METHOD (fdatasync)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p syncbench
args=(--method "${METHOD:-fdatasync}" --dir "${1:-/var/tmp}" --rounds "${ROUNDS:-5}" --secs "${SECS:-3}" --delay-us "${DELAY:-100}" --prio "${PRIO-chrt -f 10}")
[[ -n "${BASE:-}" ]] && args+=(--base "$BASE")
echo "$(nproc) cores, $(uname -r), $(findmnt -no FSTYPE --target "${1:-/var/tmp}") on $(findmnt -no SOURCE --target "${1:-/var/tmp}")"
exec python3 bench/commit_scaling.py "${args[@]}"
