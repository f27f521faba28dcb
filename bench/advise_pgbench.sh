#!/usr/bin/env bash
# Validate `syncbench advise --for postgres` against real PostgreSQL: for each wal_sync_method, run pgbench
# (TPC-B, synchronous_commit=on) with 1 and 8 clients, alternating methods round by round, then print tps
# per method (median of the rounds) and the rank of the method advise chose. advise measures DIR after the
# pgbench rounds, in the same directory as the cluster, while the (idle) server is still running.
#
# usage: bench/advise_pgbench.sh DIR [SECONDS_PER_RUN] [ROUNDS] [PORT]   (defaults 15 s, 10 rounds, port 5439: at one client the per-round ratio of two methods spans 0.64-1.33 on the test VM, so 5 rounds cannot resolve 5%)
# needs: root (runs PostgreSQL as the postgres user; installs Debian's postgresql package with apt-get when
# it is missing) and a release build of syncbench (built when missing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 DIR [SECONDS] [ROUNDS] [PORT] (DIR: an existing directory on the file system to test)"
need_dir "${1:-}"
dir=$(realpath "$1")
secs=${2:-15}
rounds=${3:-10}
port=${4:-5439}
release_bin
. "$repo/bench/pg_cluster.sh"
pgbin=$(find_pgbin)
if [ ! -x "${pgbin:-/nonexistent}/initdb" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing PostgreSQL from the distribution's packages (apt-get install postgresql)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  pgbin=$(find_pgbin)
fi
[ -x "${pgbin:-/nonexistent}/initdb" ] || {
  echo "PostgreSQL not found under /usr/lib/postgresql; run as root on a Debian/Ubuntu system to have it installed, or install it: apt-get install postgresql" >&2
  exit 2
}
pgver=$("$pgbin/postgres" --version | sed -E 's/.* ([0-9]+)(\.[0-9]+)?.*/\1/')

work="$dir/.syncbench-pgval-$$"
mkdir "$work"
chown postgres: "$work"
cleanup() {
  pg_cluster_stop
  rm -rf "$work"
}
trap cleanup EXIT
exit_on_signals
pg_cluster_start "$work" "$port"

methods=(fdatasync fsync open_datasync open_sync)
declare -A tps
for round in $(seq 1 "$rounds"); do
  # Rotate the order every round so no method always runs first (alternating, as the issue asks).
  order=("${methods[@]:$(( (round - 1) % 4 ))}" "${methods[@]:0:$(( (round - 1) % 4 ))}")
  for m in "${order[@]}"; do
    pg_use_method "$m"
    for c in 1 8; do
      t=$(pgbench_ -c "$c" -j "$c" -T "$secs" | sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1)
      tps[$m,$c]="${tps[$m,$c]:-} $t"
      echo "round $round method $m clients $c tps $t load $(cut -d' ' -f1 /proc/loadavg)" >&2
    done
  done
done

"$bin" advise "$work" --for "postgres:$pgver" --json "$work/advice.json" >/dev/null
setting() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([s[sys.argv[2]] for a in d["advice"] for s in a["settings"] if s["name"]=="wal_sync_method"][0])' "$work/advice.json" "$1"; }
chosen=$(setting value)

echo "PostgreSQL $pgver on $(findmnt -no FSTYPE -T "$dir") ($dir), pgbench -s 10, ${secs}s × $rounds rounds, median tps"
echo "advise chose: $chosen"
echo "advise's reason: $(setting reason)"
# Per method: median tps and the range over rounds; the advised method against the best by the median, and
# the per-round ratio advised/best-by-median (rounds are paired: every round runs every method), whose
# spread shows how much of a difference is noise.
for c in 1 8; do
  for m in "${methods[@]}"; do echo "$c $m ${tps[$m,$c]}"; done
done | python3 -c '
import statistics, sys
chosen = sys.argv[1]
rows = {}
for line in sys.stdin:
    c, m, *t = line.split()
    rows.setdefault(c, {})[m] = [float(x) for x in t]
for c, per in rows.items():
    print(f"clients {c}:")
    med = {m: statistics.median(t) for m, t in per.items()}
    best = max(med, key=med.get)
    for m in sorted(med, key=med.get, reverse=True):
        mark = "   <- advised" if m == chosen else ""
        print(f"  {m:<14} {med[m]:9.1f} tps  {100 * med[m] / med[best]:5.1f}% of best  (rounds {min(per[m]):.0f}-{max(per[m]):.0f}){mark}")
    if chosen in per and chosen != best:
        ratios = sorted(a / b for a, b in zip(per[chosen], per[best]))
        print(f"  per round {chosen}/{best}: " + " ".join(f"{r:.3f}" for r in ratios) + f" (median {statistics.median(ratios):.3f})")
' "$chosen"
