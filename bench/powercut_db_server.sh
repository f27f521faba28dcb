#!/usr/bin/env bash
# `syncbench powercut db` for MariaDB or etcd over issue #34's matrix, then one line per cell: cuts,
# acknowledged, lost, failed recoveries, integrity failures, damaged cuts (any of those, or a broken
# invariant), cuts per minute, and where a cut's time goes (median and range of the cut, the server's
# restart, the load before the cut).
#  - mariadb: the safe settings (the defaults, whose innodb_flush_method is O_DIRECT, and advise's other
#    pick O_DSYNC) on the honest profiles × ext4, xfs; the negative controls (innodb_flush_log_at_trx_commit
#    = 0 and 2; innodb_doublewrite = OFF) on one honest profile; the defaults on cheating-ssd.
#  - etcd: the defaults on the honest profiles × ext4, xfs; the negative control (--unsafe-no-fsync, hidden
#    from etcd 3.4's --help but accepted) on one honest profile; the defaults on cheating-ssd.
#
#   bench/powercut_db_server.sh mariadb|etcd [CUTS]        (root; default 25 cuts per cell)
#
# Environment: BIN (target/release/syncbench), OUT (bench/results/powercut-db-DATE), SEED (1),
# PROFILES (hdd-7200,nvme-consumer,nvme-plp), FSS (ext4,xfs), STEPS (which runs, default all: mariadb
# "defaults o_dsync trx0 trx2 dw_off cheating", etcd "defaults no_fsync cheating").
set -uo pipefail
cd "$(dirname "$0")/.."
DB=${1:-}
case $DB in
    mariadb) ALL_STEPS="defaults o_dsync trx0 trx2 dw_off cheating" ;;
    etcd) ALL_STEPS="defaults no_fsync cheating" ;;
    *) echo "usage: $0 mariadb|etcd [CUTS] (got '${DB}')" >&2; exit 2 ;;
esac
BIN=${BIN:-target/release/syncbench}
CUTS=${2:-25}
SEED=${SEED:-1}
OUT=${OUT:-bench/results/powercut-db-$(date -u +%F)}
PROFILES=${PROFILES:-hdd-7200,nvme-consumer,nvme-plp}
FSS=${FSS:-ext4,xfs}
STEPS=${STEPS:-$ALL_STEPS}
mkdir -p "$OUT"
[ -x "$BIN" ] || cargo build --release -p syncbench

run() {
    local name=$1
    shift
    echo "== $DB $name: powercut db --db $DB --cuts $CUTS --seed $SEED $* ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
    "$BIN" powercut db --db "$DB" --cuts "$CUTS" --seed "$SEED" "$@" --json "$OUT/$DB-$name.json" \
        >"$OUT/$DB-$name.txt" 2>&1
    echo "(exit $?)" >>"$OUT/$DB-$name.txt"
    grep -v ' cut [0-9]*:' "$OUT/$DB-$name.txt" || true
}

step() {
    case $DB:$1 in
        *:defaults) run defaults --profile "$PROFILES" --fs "$FSS" ;;
        *:cheating) run cheating --profile cheating-ssd --fs ext4 ;;
        mariadb:o_dsync) run o_dsync --set innodb_flush_method=O_DSYNC --profile "$PROFILES" --fs "$FSS" ;;
        mariadb:trx0) run trx0 --set innodb_flush_log_at_trx_commit=0 --profile nvme-consumer --fs ext4 ;;
        mariadb:trx2) run trx2 --set innodb_flush_log_at_trx_commit=2 --profile nvme-consumer --fs ext4 ;;
        mariadb:dw_off) run dw_off --set innodb_doublewrite=OFF --profile nvme-consumer --fs ext4 ;;
        etcd:no_fsync) run no_fsync --set unsafe-no-fsync=true --profile nvme-consumer --fs ext4 ;;
        *) echo "unknown step $1 for $DB (steps: $ALL_STEPS)" >&2 ;;
    esac
}

echo "machine: $(nproc) vCPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M UTC')"
for s in $STEPS; do
    step "$s"
done
python3 - "$OUT"/"$DB"-*.json <<'PY' | tee "$OUT/$DB-summary.txt"
import json, statistics, sys

def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values) / 1000:.1f} s ({min(values) / 1000:.1f}-{max(values) / 1000:.1f})"

def damaged(c):
    v = c.get("verification") or {}
    integrity = c.get("integrity")
    return bool(
        c.get("recovery_failure") or c.get("read_error") or (integrity and not integrity["ok"])
        or v.get("lost") or v.get("accounts_inconsistent") or v.get("balance_sum_off_by")
        or v.get("garbled_rows") or v.get("duplicate_rows"))

print("settings | profile | fs | cuts | acked | lost | failed rec. | integrity fail | damaged cuts | cuts/min | cut | restart | load")
for path in sys.argv[1:]:
    for cell in json.load(open(path))["cells"]:
        cuts = cell["cuts"]
        n = len(cuts)
        lost = sum((c.get("verification") or {}).get("lost", 0) for c in cuts)
        print(" | ".join(str(x) for x in [
            cell["settings"], cell["profile"], cell["fs"], n, sum(c["acknowledged"] for c in cuts), lost,
            sum(1 for c in cuts if c.get("recovery_failure")),
            sum(1 for c in cuts if c.get("integrity") and not c["integrity"]["ok"]),
            f"{sum(1 for c in cuts if damaged(c))}/{n}",
            f"{n / cell['elapsed_s'] * 60:.1f}" if cell["elapsed_s"] else "-",
            spread([c.get("cut_ms") for c in cuts]), spread([c.get("restart_ms") for c in cuts]),
            spread([c.get("cut_after_ms") for c in cuts])]))
PY
