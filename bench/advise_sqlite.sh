#!/usr/bin/env bash
# Validate `syncbench advise --for sqlite` against SQLite itself (Python's sqlite3 module, the system
# libsqlite3): commits/s of one connection under synchronous FULL and NORMAL, in WAL and in rollback-journal
# (DELETE) mode, the four settings alternating (order rotated) round by round. Then advise's journal_mode
# pick against the measured best at each synchronous level, and advise's predicted commit rates (the
# evidence behind its synchronous setting) against the measured ones. advise measures DIR after the rounds.
#
# usage: bench/advise_sqlite.sh DIR [SECONDS_PER_RUN] [ROUNDS] [OUT_DIR]   (defaults 5 s, 5 rounds)
# needs: python3 with its sqlite3 module (python3 installed with apt-get when missing, as root), a release
# build of syncbench (SYNCBENCH=path, else target/release/syncbench, built when missing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 DIR [SECONDS] [ROUNDS] [OUT_DIR] (DIR: an existing directory on the file system to test; needs python3 with sqlite3)"
need_dir "${1:-}"
dir=$(realpath "$1")
secs=${2:-5}
rounds=${3:-5}
out=${4:-}
release_bin "${SYNCBENCH:-}"
if ! python3 -c 'import sqlite3' 2>/dev/null; then
  { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; } || usage_error " — python3's sqlite3 module is missing: apt-get install python3"
  echo "installing python3 from the distribution's packages (apt-get)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null
  python3 -c 'import sqlite3' 2>/dev/null || usage_error " — python3's sqlite3 module did not install"
fi
version=$(python3 -c 'import sqlite3; print(sqlite3.sqlite_version)')

work="$dir/.syncbench-sqliteval-$$"
mkdir "$work"
trap 'rm -rf "$work"' EXIT
exit_on_signals
echo "SQLite $version on $(findmnt -no FSTYPE -T "$dir") ($dir, $(findmnt -no SOURCE -T "$dir")), ${secs}s × $rounds rounds"
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$repo/bench/advise_sqlite_rounds.py" "$work" "$secs" "$rounds" | tee "$work/raw.txt"
echo "rounds done, load $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$work"/*.db*
"$bin" advise "$work" --for "sqlite" --json "$work/advice.json" >/dev/null
[ -z "$out" ] || cp "$work/advice.json" "$work/raw.txt" "$out/"
chosen=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([s["value"] for a in d["advice"] for s in a["settings"] if s["name"]=="journal_mode"][0])' "$work/advice.json")
python3 "$repo/bench/advise_summary.py" "$work/raw.txt" "$chosen"
python3 "$repo/bench/advise_sqlite_predicted.py" "$work/raw.txt" "$work/advice.json"
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
