#!/usr/bin/env bash
# Validate `syncbench advise --for rocksdb` against RocksDB itself: db_bench (Debian's rocksdb-tools) with
# WriteOptions.sync=true under each candidate setting — the default (recycle_log_file_num=0,
# wal_bytes_per_sync=0, manual_wal_flush=false), recycle_log_file_num=4, recycle_log_file_num=4 with
# wal_recovery_mode=kSkipAnyCorruptedRecords (`recycle4_skip`: before 9.1 RocksDB turns recycling off under
# the default kPointInTimeRecovery, so only this one recycles; the script prints the value each setting's
# LOG reports), wal_bytes_per_sync=1 MiB, manual_wal_flush=true, and the default once more (`default2`, an
# A/A control whose per-round ratio to the default is the noise between rounds) — in alternating rounds
# (the order rotates every round), for fillrandom and fillseq with 1 thread; then `syncbench advise DIR
# --for rocksdb:INSTALLED` on the same directory (and the same measurement advised for 9.1), and per benchmark the median ops/s of each
# setting, its range over the rounds, the advised setting's share of the best and the per-round ratio
# advised/best (the rounds pair up). Twice: the installed version's settings, and recycling in effect
# (default vs recycle4_skip) against what advise says for 9.1, where recycling works with the default.
#
# db_bench 7.8 has no flag for recycle_log_file_num, so every setting runs from a RocksDB OPTIONS file
# (--options_file; db_bench then takes only WriteOptions and benchmark flags from the command line): the
# file db_bench itself writes for --write_buffer_size=WBS --compression_type=none, with the one option
# changed. Recycling only acts after a memtable switch makes a WAL obsolete, so WBS must be small enough for
# several switches per run: the default 1 MiB holds ~900 entries of 1000 bytes; on a disk of ~100 syncs/s
# (hdd-7200) pass 131072.
#
# usage: bench/advise_rocksdb.sh DIR [SECONDS_PER_RUN] [ROUNDS] [WBS]   (defaults 5 s, 5 rounds, 1048576)
# needs: db_bench (installs rocksdb-tools with apt-get when missing and run as root), a release build of
# syncbench (built when missing). Data lives in DIR/.syncbench-rocksval-PID, removed at exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 DIR [SECONDS] [ROUNDS] [WRITE_BUFFER_SIZE] (DIR: an existing directory on the file system to test)"
need_dir "${1:-}"
dir=$(realpath "$1")
secs=${2:-5} rounds=${3:-5} wbs=${4:-1048576}
if ! command -v db_bench >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing db_bench from the distribution's packages (apt-get install rocksdb-tools)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rocksdb-tools >/dev/null
fi
command -v db_bench >/dev/null || usage_error "; db_bench not found: apt-get install rocksdb-tools (as root)"
release_bin

work="$dir/.syncbench-rocksval-$$"
mkdir "$work"
trap 'rm -rf "$work"' EXIT
exit_on_signals

# The base OPTIONS file, as db_bench writes it, and one file per candidate.
db_bench --benchmarks=fillrandom --num=1 --db="$work/gen" --write_buffer_size="$wbs" --compression_type=none >/dev/null 2>&1
base=$(ls "$work"/gen/OPTIONS-* | sort | tail -1)
settings=(default recycle4 recycle4_skip wal_bytes_per_sync manual_wal_flush default2)
declare -A change=([default]="" [default2]="" [recycle4]="recycle_log_file_num=4" [wal_bytes_per_sync]="wal_bytes_per_sync=1048576"
  [recycle4_skip]="recycle_log_file_num=4 wal_recovery_mode=kSkipAnyCorruptedRecords"
  [manual_wal_flush]="manual_wal_flush=true")
for s in "${settings[@]}"; do
  cp "$base" "$work/$s.ini"
  for kv in ${change[$s]}; do
    sed -i "s/^  ${kv%%=*}=.*/  $kv/" "$work/$s.ini"
    grep -q "^  $kv$" "$work/$s.ini" || { echo "could not set $kv in the OPTIONS file" >&2; exit 1; }
  done
done
rm -rf "$work/gen"

declare -A effective
# bench SETTING NAME THREADS ARGS...: one fresh database; prints ops/s.
bench() {
  local s=$1 name=$2 threads=$3
  shift 3
  rm -rf "$work/db"
  db_bench --options_file="$work/$s.ini" --db="$work/db" --sync=1 --threads="$threads" --value_size=1000 \
    --benchmarks="$name" "$@" 2>&1 | awk -v b="$name" '$1 == b { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/sec") print $i }'
}

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores; $(db_bench --version 2>&1 | head -1); $(findmnt -no FSTYPE,SOURCE -T "$dir") ($dir); ${secs}s per run, $rounds rounds, write_buffer_size $wbs, value 1000 B, sync=true"
declare -A ops
for round in $(seq 1 "$rounds"); do
  k=$(( (round - 1) % ${#settings[@]} ))
  order=("${settings[@]:$k}" "${settings[@]:0:$k}")
  for s in "${order[@]}"; do
    r1=$(bench "$s" fillrandom 1 --duration="$secs" --num=1000000000)
    # What RocksDB made of the setting (SanitizeOptions may override it), once per setting.
    [ -n "${effective[$s]:-}" ] || effective[$s]=$(sed -nE 's/.*Options\.recycle_log_file_num: ([0-9]+).*/\1/p' "$work/db/LOG" | head -1)
    # fillseq ignores --duration: as many writes as fillrandom did in SECONDS.
    n=$(python3 -c "print(max(100, int(float('${r1:-0}') * $secs)))")
    sq=$(bench "$s" fillseq 1 --num="$n")
    for kv in "fillrandom-t1=$r1" "fillseq-t1=$sq"; do
      [ -n "${kv#*=}" ] || { echo "db_bench ${kv%%=*} with $s gave no rate" >&2; exit 1; }
      ops[${kv%%=*},$s]="${ops[${kv%%=*},$s]:-} ${kv#*=}"
    done
    echo "round $round $s fillrandom-t1 $r1 fillseq-t1 $sq load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
for s in "${settings[@]}"; do echo "effective: $s: ${change[$s]:-(default)} -> LOG says recycle_log_file_num ${effective[$s]}"; done

ver=$(db_bench --version 2>&1 | sed -nE 's/.*version ([0-9]+)\.([0-9]+).*/\1.\2/p' | head -1)
"$bin" advise "$work" --for "rocksdb:$ver" --json "$work/advice.json" >"$work/advice.txt" || true
# The same measurement, advised for 9.1 (advise keeps one target per database, so a second pass --from it).
"$bin" advise --from "$work/advice.json" --for rocksdb:9.1 --json "$work/advice91.json" >/dev/null || true
# get FILE SETTING FIELD
get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([s[sys.argv[3]] for a in d["advice"] for s in a["settings"] if s["name"]==sys.argv[2]][0])' "$work/$1" "$2" "$3"; }
rec=$(get advice.json recycle_log_file_num value) wb=$(get advice.json wal_bytes_per_sync value) mw=$(get advice.json manual_wal_flush value)
case "$rec/$wb/$mw" in
  0/0/false) chosen=default ;;
  4/0/false) chosen=recycle4 ;;
  *) chosen="recycle_log_file_num=$rec,wal_bytes_per_sync=$wb,manual_wal_flush=$mw" ;;
esac
rec91=$(get advice91.json recycle_log_file_num value)
chosen91=$([ "$rec91" = 4 ] && echo recycle4_skip || echo default)
echo "advise chose for RocksDB $ver: recycle_log_file_num=$rec wal_bytes_per_sync=$wb manual_wal_flush=$mw ($chosen)"
echo "advise's reason (recycle_log_file_num, $ver): $(get advice.json recycle_log_file_num reason)"
echo "advise chose for RocksDB 9.1: recycle_log_file_num=$rec91 (measured as $chosen91)"
echo "advise's reason (WriteOptions.sync): $(get advice.json WriteOptions.sync reason)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## RocksDB $ver's settings, against advise for $ver"
for b in fillrandom-t1 fillseq-t1; do
  for s in default recycle4 wal_bytes_per_sync manual_wal_flush default2; do echo "$b $s ${ops[$b,$s]}"; done
done | python3 "$repo/bench/advise_compare.py" "$chosen" ops/s
echo "## recycling in effect (recycle4_skip) against advise for 9.1"
for b in fillrandom-t1 fillseq-t1; do
  for s in default recycle4_skip default2; do echo "$b $s ${ops[$b,$s]}"; done
done | sed 's/^\([a-z0-9-]*\)/\1-recycling/' | python3 "$repo/bench/advise_compare.py" "$chosen91" ops/s
