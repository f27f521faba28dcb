#!/usr/bin/env bash
# Device flushes per transaction for each innodb_flush_method on a `syncbench lab` disk: the lab's own
# counters (`syncbench lab stats`) around one sysbench run per method and workload. Unlike a rate, a count
# of flushes does not depend on how loaded the machine is, so it explains what the rates of
# bench/advise_mariadb.sh cannot resolve on a noisy machine.
#
# usage: bench/advise_mariadb_flushes.sh LAB_MOUNT [SECONDS]   (as root; mariadb-server and sysbench installed)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 LAB_MOUNT [SECONDS] (LAB_MOUNT: a directory \`syncbench lab up\` mounted; needs root, mariadb-server, sysbench)"
need_dir "${1:-}"
command -v mariadbd >/dev/null && command -v sysbench >/dev/null || usage_error " — install mariadb-server and sysbench"
dir=$(realpath "$1")
secs=${2:-10}
release_bin "${SYNCBENCH:-}"
"$bin" lab stats "$dir" >/dev/null 2>&1 || usage_error " — $dir is not a lab mount"
. "$repo/bench/mariadb_server.sh"
work="$dir/.syncbench-mariaflush-$$"
mkdir "$work"
trap 'mariadb_stop; rm -rf "$work"' EXIT
exit_on_signals
counters() { "$bin" lab stats "$dir" --json - | python3 -c 'import json,sys; c=json.load(sys.stdin)["device"]["counters"]; print(c["flushes"] - c["empty_flushes"], c["writes"])'; }
mariadb_init "$work"
mariadb_start O_DIRECT
maria_sql -e 'create database sbtest'
sb=(--db-driver=mysql --mysql-socket="$work/sock" --mysql-user=root --tables=4 --table-size=10000)
sysbench oltp_write_only "${sb[@]}" --threads=4 prepare >/dev/null
mariadb_stop
echo "MariaDB $(mariadbd --version | sed -nE 's/.*Ver ([0-9.]+).*/\1/p') on $("$bin" lab stats "$dir" --json - | python3 -c 'import json,sys; print(json.load(sys.stdin)["lab"]["profile"])'), ${secs}s per run, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| method | workload | threads | transactions | device flushes / transaction | device writes / transaction |"
echo "|---|---|---:|---:|---:|---:|"
for m in fsync O_DSYNC O_DIRECT O_DIRECT_NO_FSYNC; do
  mariadb_start "$m"
  for load in "oltp_insert 1" "oltp_write_only 1" "oltp_write_only 16"; do
    set -- $load
    read -r f0 w0 < <(counters)
    n=$(sysbench "$1" "${sb[@]}" --threads="$2" --time="$secs" run | sed -nE 's/^ *transactions: *([0-9]+) .*/\1/p')
    read -r f1 w1 < <(counters)
    python3 -c 'import sys; m,w,t,n,f,wr=sys.argv[1:]; n=int(n); print(f"| {m} | {w} | {t} | {n} | {int(f)/n:.2f} | {int(wr)/n:.2f} |")' "$m" "$1" "$2" "$n" $((f1 - f0)) $((w1 - w0))
  done
  mariadb_stop
done
