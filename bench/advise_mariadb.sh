#!/usr/bin/env bash
# Validate `syncbench advise --for mariadb:VERSION` against MariaDB itself: a private mariadbd (datadir under
# DIR, not the system service) with innodb_flush_log_at_trx_commit=1 and each innodb_flush_method, sysbench
# oltp_insert and oltp_write_only at 1 and 16 threads, the methods alternating (order rotated) round by
# round; then advise's pick next to the measured best, the ratio of their medians, and the range of the
# per-round ratio (the noise between rounds). advise measures DIR after the rounds, the server stopped; its
# JSON is kept (advice.json in OUT) so a changed rule can be re-judged with `advise --from`.
#
# usage: bench/advise_mariadb.sh DIR [SECONDS_PER_RUN] [ROUNDS] [OUT_DIR]   (defaults 5 s, 5 rounds)
# METHODS="O_DIRECT O_DIRECT_NO_FSYNC" and LOADS="oltp_insert:1 oltp_write_only:16" narrow an A/B.
# needs: root (mariadbd runs as mysql), Debian's mariadb-server and sysbench (installed with apt-get when
# missing), a release build of syncbench (SYNCBENCH=path, else target/release/syncbench, built when missing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 DIR [SECONDS] [ROUNDS] [OUT_DIR] (DIR: an existing directory on the file system to test; needs root, mariadb-server and sysbench)"
need_dir "${1:-}"
[ "$(id -u)" = 0 ] || usage_error " — run as root"
dir=$(realpath "$1")
secs=${2:-5}
rounds=${3:-5}
out=${4:-}
release_bin "${SYNCBENCH:-}"
if ! command -v mariadbd >/dev/null || ! command -v sysbench >/dev/null; then
  command -v apt-get >/dev/null || usage_error " — mariadbd or sysbench missing: install mariadb-server and sysbench"
  echo "installing mariadb-server and sysbench from the distribution's packages (apt-get)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server sysbench >/dev/null
fi
command -v mariadbd >/dev/null && command -v sysbench >/dev/null \
  || usage_error " — mariadb-server or sysbench did not install: apt-get install mariadb-server sysbench"
. "$repo/bench/mariadb_server.sh"
version=$(mariadbd --version | sed -nE 's/.*Ver ([0-9]+\.[0-9]+).*/\1/p')

work="$dir/.syncbench-mariaval-$$"
mkdir "$work"
cleanup() {
  mariadb_stop
  rm -rf "$work"
}
trap cleanup EXIT
exit_on_signals
mariadb_init "$work"
mariadb_start O_DIRECT
maria_sql -e 'create database sbtest'
sb=(--db-driver=mysql --mysql-socket="$work/sock" --mysql-user=root --tables=4 --table-size=10000)
sysbench oltp_write_only "${sb[@]}" --threads=4 prepare >/dev/null
mariadb_stop

read -r -a methods <<<"${METHODS:-fsync O_DSYNC O_DIRECT O_DIRECT_NO_FSYNC}"
read -r -a loads <<<"${LOADS:-oltp_insert:1 oltp_insert:16 oltp_write_only:1 oltp_write_only:16}"
raw="$work/raw.txt"
: >"$raw"
echo "MariaDB $version on $(findmnt -no FSTYPE -T "$dir") ($dir, $(findmnt -no SOURCE -T "$dir")), ${secs}s × $rounds rounds"
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  shift_by=$(( (round - 1) % ${#methods[@]} ))
  order=("${methods[@]:$shift_by}" "${methods[@]:0:$shift_by}")
  for m in "${order[@]}"; do
    mariadb_start "$m"
    # Warm the buffer pool after the restart: under fsync the data files' pages are still in the OS page
    # cache, under the O_DIRECT modes they must be read from the device, a restart cost that is not the
    # setting's steady-state commit rate (runs of 2026-11-24 before this line: see docs/benchmarks.md).
    [ -z "${MARIADB_NO_WARMUP:-}" ] && for t in 1 2 3 4; do
      maria_sql -e "select count(*), sum(length(c)) from sbtest.sbtest$t; select count(*) from sbtest.sbtest$t force index (k_$t)" >/dev/null
    done
    for load in "${loads[@]}"; do
      set -- ${load/:/ }
      tps=$(sysbench "$1" "${sb[@]}" --threads="$2" --time="$secs" --report-interval=0 run \
        | sed -nE 's/^ *transactions: *[0-9]+ *\(([0-9.]+) per sec.*/\1/p')
      [ -n "$tps" ] || { echo "sysbench $1 --threads=$2 gave no rate" >&2; exit 1; }
      echo "$round $m $1 $2 $tps" | tee -a "$raw"
    done
    mariadb_stop
  done
  echo "round $round done, load $(cut -d' ' -f1-3 /proc/loadavg)"
done

"$bin" advise "$work" --for "mariadb:$version" --json "$work/advice.json" >/dev/null
[ -z "$out" ] || cp "$work/advice.json" "$out/advice.json"
[ -z "$out" ] || cp "$raw" "$out/raw.txt"
chosen=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([s["value"] for a in d["advice"] for s in a["settings"] if s["name"]=="innodb_flush_method"][0])' "$work/advice.json")
python3 "$repo/bench/advise_summary.py" "$raw" "$chosen"
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
