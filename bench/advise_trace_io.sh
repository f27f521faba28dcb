#!/usr/bin/env bash
# What MariaDB and SQLite do per commit, as advise's model of them assumes (docs/advise.md, "What the
# databases do"): the open flags of MariaDB's redo log and a data file under each innodb_flush_method, and
# the fsync/fdatasync/pwrite calls of 20 autocommit INSERTs; SQLite's syncs per 100 commits in WAL and
# rollback-journal mode, FULL and NORMAL.
#
# usage: bench/advise_trace_io.sh DIR   (as root; needs strace, mariadb-server, python3)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 DIR (DIR: an existing directory on the file system to trace on; needs root, strace, mariadb-server, python3)"
need_dir "${1:-}"
for p in strace mariadbd python3; do command -v $p >/dev/null || usage_error " — $p is missing"; done
dir=$(realpath "$1")
. "$repo/bench/mariadb_server.sh"
work="$dir/.syncbench-trace-$$"
mkdir "$work"
trap 'mariadb_stop; rm -rf "$work"' EXIT
exit_on_signals
count() { grep -c "$1" "$2" || true; }
mariadb_init "$work/m"
echo "MariaDB $(mariadbd --version | sed -nE 's/.*Ver ([0-9.]+).*/\1/p'), per 20 single-row autocommit INSERTs:"
for m in fsync O_DSYNC O_DIRECT O_DIRECT_NO_FSYNC; do
  mariadb_start "$m"
  maria_sql -e "create database if not exists t; create table if not exists t.t (a int primary key auto_increment, b varchar(100)) engine=innodb"
  flags=""
  for fd in /proc/$maria_pid/fd/*; do
    case $(readlink "$fd") in
      */ib_logfile0) flags="$flags ib_logfile0=$(sed -nE 's/^flags:\s+//p' /proc/$maria_pid/fdinfo/${fd##*/})" ;;
      */t/t.ibd) flags="$flags t.ibd=$(sed -nE 's/^flags:\s+//p' /proc/$maria_pid/fdinfo/${fd##*/})" ;;
    esac
  done
  strace -f -p "$maria_pid" -e trace=fsync,fdatasync,pwrite64,pwritev -o "$work/st" 2>/dev/null &
  st=$!
  sleep 1
  for i in $(seq 1 20); do maria_sql -e "insert into t.t (b) values ('x')"; done
  sleep 0.5
  kill "$st"; wait "$st" 2>/dev/null || true
  echo "  $m: open flags (octal)$flags; fdatasync $(count fdatasync "$work/st"), fsync $(count 'fsync(' "$work/st"), pwrite $(count pwrite "$work/st")"
  mariadb_stop
done
mkdir "$work/s"
cat >"$work/s/commit.py" <<'PY'
import sqlite3, sys
mode, sync, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = sqlite3.connect(f"{mode}-{sync}.db", isolation_level=None)
db.execute(f"pragma journal_mode={mode}"); db.execute(f"pragma synchronous={sync}")
db.execute("create table if not exists t (a integer primary key, b text)")
for _ in range(n):
    db.execute("begin"); db.execute("insert into t (b) values (?)", ("x" * 100,)); db.execute("commit")
PY
echo "SQLite $(python3 -c 'import sqlite3; print(sqlite3.sqlite_version)'), per 100 commits (after 5 to create the files):"
for mode in wal delete; do
  for s in FULL NORMAL; do
    (cd "$work/s" && python3 commit.py $mode $s 5 && strace -f -e trace=fsync,fdatasync,pwrite64,unlink -o st python3 commit.py $mode $s 100)
    echo "  $mode $s: fdatasync $(count fdatasync "$work/s/st"), fsync $(count 'fsync(' "$work/s/st"), pwrite $(count pwrite "$work/s/st"), unlink $(count unlink "$work/s/st")"
  done
done
