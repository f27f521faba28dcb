#!/usr/bin/env bash
# Judge a recorded validation again with today's rules: advise --from the advice.json that
# bench/advise_mariadb.sh or bench/advise_sqlite.sh kept (it carries advise's own measurement of the disk),
# then the same summary against the recorded benchmark rounds (raw.txt). For a rule change: the database's
# rates do not depend on advise, so only the pick is recomputed.
#
# usage: bench/advise_rejudge.sh RESULT_DIR mariadb|sqlite [VERSION]   (SYNCBENCH=path, else target/release)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 RESULT_DIR mariadb|sqlite [VERSION] (RESULT_DIR: holds advice.json and raw.txt from bench/advise_*.sh)"
[ -f "${1:-}/advice.json" ] && [ -f "$1/raw.txt" ] || usage_error
case "${2:-}" in
  mariadb) target="mariadb:${3:-10.11}"; setting=innodb_flush_method ;;
  sqlite) target="sqlite${3:+:$3}"; setting=journal_mode ;;
  *) usage_error ;;
esac
release_bin "${SYNCBENCH:-}"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
SYNCBENCH_NO_VERSION_DETECT=1 "$bin" advise --from "$1/advice.json" --for "$target" --json "$tmp" >/dev/null
chosen=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([s["value"] for a in d["advice"] for s in a["settings"] if s["name"]==sys.argv[2]][0])' "$tmp" "$setting")
echo "rejudged $(date -u +%FT%TZ) with $("$bin" --version 2>/dev/null || echo syncbench) ($(cd "$repo" && git rev-parse --short HEAD))"
python3 "$repo/bench/advise_summary.py" "$1/raw.txt" "$chosen"
[ "$2" != sqlite ] || python3 "$repo/bench/advise_sqlite_predicted.py" "$1/raw.txt" "$tmp"
