#!/usr/bin/env bash
# Why syncbench fills its files in 8 KiB writes (issue #2, agreement with pg_test_fsync): on kernels with
# large folios the page cache keeps the folio size a file was written with, and 8 KiB write+sync cycles into
# a file filled in 1 MiB writes are slower. Runs bench/folio_effect.c (two files, alternating 0.2 s slices).
# Usage: bench/folio_effect.sh [DIR]     env: ROUNDS (default 5), SECS per comparison (default 6)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath "${1:-.}")
rounds=${ROUNDS:-5}
secs=${SECS:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/folio_effect" bench/folio_effect.c
echo "dir: $dir ($(findmnt -no FSTYPE --target "$dir")), kernel $(uname -r), $secs s per comparison, load average: $(cut -d" " -f1-3 /proc/loadavg)"
out=$work/rows
echo "round  chunk_a_kib  chunk_b_kib  sync       a_dontneed  a_ops_per_s  b_ops_per_s  a_over_b"
for i in $(seq "$rounds"); do
  for cfg in "1024 8 fdatasync 0" "1024 8 fsync 0" "1024 8 fdatasync 1" "8 8 fdatasync 0"; do
    read -r a b sync dn ra rb ratio < <("$work/folio_effect" "$dir" "$secs" 0.2 $cfg)
    printf "%5d  %11s  %11s  %-9s  %10s  %11s  %11s  %8s\n" "$i" "$a" "$b" "$sync" "$dn" "$ra" "$rb" "$ratio" | tee -a "$out"
  done
done
echo
echo "median a_over_b per configuration:"
python3 - "$out" <<'PY'
import statistics, sys, collections
groups = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    groups[(f[1], f[2], f[3], f[4])].append(float(f[7]))
for (a, b, sync, dn), ratios in groups.items():
    print(f"  A filled in {a} KiB writes{' then dropped from cache' if dn == '1' else ''}, B in {b} KiB, {sync}: "
          f"median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, n={len(ratios)})")
PY
