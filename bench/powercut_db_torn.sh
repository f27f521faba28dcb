#!/usr/bin/env bash
# Torn pages on purpose (#34): `powercut db --untorn SIZE --aim data-writes`, torn-page protection off vs on
# on a tearing disk (the same seeds), and off on a disk whose untorn unit covers the page.
#
#   sudo bench/powercut_db_torn.sh [postgres|mariadb|aligned|files|sqlite|summary]...
#   (default: postgres mariadb aligned summary)
#
# postgres: full_page_writes=off and =on at --untorn 4KiB, full_page_writes=off at --untorn 16KiB.
# mariadb:  innodb_doublewrite=OFF and =ON at --untorn 4KiB, innodb_doublewrite=OFF at --untorn 16KiB
#           (InnoDB's page is 16 KiB).
# aligned:  both offs at --untorn 16KiB on ext4-bigalloc (16 KiB clusters: pages at 16 KiB-aligned device
#           offsets), PostgreSQL and MariaDB alternating, ROUNDS x CUTS each.
# files-postgres, files-mariadb: off vs on at --untorn 4KiB for both databases with --aim data-files (each cut waits for a
#           page-sized write into a table data file's mapped blocks), alternating.
# sqlite:   SQLite DELETE mode, synchronous=FULL vs EXTRA, aimed (4 KiB), alternating: where the aim lands
#           on the journal commit of the rollback journal's unlink.
# The three cells alternate: ROUNDS rounds of CUTS cuts each, round r with seed SEED+r for all three, so
# every cell gets the same seeds and the machine's drift over the run falls on all of them alike.
#
# Environment: AIM (data-writes; the files part uses data-files), BIN (default target/release/syncbench), PROFILE (nvme-consumer), FS (ext4), ROUNDS (5),
# CUTS (10), SEED (1), OUT (bench/results/powercut-db-torn-DATE). Needs root, /dev/fuse, the servers.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/syncbench}
AIM=${AIM:-data-writes}
PROFILE=${PROFILE:-nvme-consumer}
FS=${FS:-ext4}
ROUNDS=${ROUNDS:-5}
CUTS=${CUTS:-10}
SEED=${SEED:-1}
OUT=${OUT:-bench/results/powercut-db-torn-$(date -u +%F)}
mkdir -p "$OUT"
[ -x "$BIN" ] || cargo build --release -p syncbench

# run DB NAME UNTORN SETTING ROUND [FS]: one round of one cell; its table and per-cut lines in
# NAME-rROUND.txt, every cut in NAME-rROUND.json.
run() {
    local db=$1 name=$2 untorn=$3 setting=$4 round=$5 fs=${6:-$FS}
    local seed=$((SEED + round)) base="$OUT/$db-$name-r$round"
    echo "== $db $name round $round: powercut db --db $db --set $setting --profile $PROFILE --fs $fs" \
        "--untorn $untorn --aim $AIM --cuts $CUTS --seed $seed ($(date -u +%T))" | tee "$base.txt"
    local start=$SECONDS rc=0
    "$BIN" powercut db --db "$db" --set "$setting" --profile "$PROFILE" --fs "$fs" --untorn "$untorn" \
        --aim "$AIM" --cuts "$CUTS" --seed "$seed" --json "$base.json" >>"$base.txt" 2>&1 || rc=$?
    echo "exit $rc after $((SECONDS - start)) s" | tee -a "$base.txt"
    tail -n 2 "$base.txt" | head -n 1
}

cells() {
    local db=$1 key=$2 off=$3 on=$4
    for round in $(seq 0 $((ROUNDS - 1))); do
        run "$db" "$key-$off-4KiB" 4KiB "$key=$off" "$round"
        run "$db" "$key-$on-4KiB" 4KiB "$key=$on" "$round"
        run "$db" "$key-$off-16KiB" 16KiB "$key=$off" "$round"
    done
}

aligned() {
    for round in $(seq 0 $((ROUNDS - 1))); do
        run postgres full_page_writes-off-16KiB-bigalloc 16KiB full_page_writes=off "$round" ext4-bigalloc
        run mariadb innodb_doublewrite-OFF-16KiB-bigalloc 16KiB innodb_doublewrite=OFF "$round" ext4-bigalloc
    done
}

files() {
    AIM=data-files
    for round in $(seq 0 $((ROUNDS - 1))); do
        run "$1" "$2-$3-4KiB-files" 4KiB "$2=$3" "$round"
        run "$1" "$2-$4-4KiB-files" 4KiB "$2=$4" "$round"
    done
}

sqlite_delete() {
    for round in $(seq 0 $((ROUNDS - 1))); do
        run sqlite delete-full-aimed 512B journal_mode=DELETE,synchronous=FULL "$round"
        run sqlite delete-extra-aimed 512B journal_mode=DELETE,synchronous=EXTRA "$round"
    done
}

# summary: per cell, over every round's JSON: cuts, damaged cuts and how, what the aim hit.
summary() {
    python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, re, sys
cells = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    name = re.sub(r"-r\d+\.json$", "", os.path.basename(path))
    for c in json.load(open(path))["cells"]:
        cells.setdefault(name, []).append(c)
print(f"{'cell':46} {'cuts':>4} {'damaged':>7} {'lost':>4} {'failrec':>7} {'integr':>6} {'aim met':>7} "
      f"{'in data':>7} {'torn in data':>12} {'unaligned':>9}  min/cut  seeds")
for name, cs in cells.items():
    cuts = [x for c in cs for x in c["cuts"]]
    aims = [x["aim"] for x in cuts if x.get("aim")]
    met = [a for a in aims if a["met"]]
    data = [a for a in met if a.get("landed_in") == "data"]
    lost = sum((x.get("verification") or {}).get("lost", 0) for x in cuts)
    failrec = sum(1 for x in cuts if x.get("recovery_failure"))
    integ = sum(1 for x in cuts if x.get("read_error") or (x.get("integrity") and not x["integrity"]["ok"]))
    inv = lambda x: (x.get("verification") or {})
    damaged = sum(1 for x in cuts if x.get("recovery_failure") or x.get("read_error")
                  or (x.get("integrity") and not x["integrity"]["ok"]) or inv(x).get("lost", 0) > 0)
    secs = sum(c["elapsed_s"] for c in cs)
    # torn data writes whose pages are not aligned to the untorn unit on the device (the write starts off
    # a multiple of min(page, unit)): one of its pages can straddle a unit boundary and tear
    page = {"postgres": 8192, "mariadb": 16384}.get(cs[0]["db"], 4096)
    align = min(page, cs[0]["untorn_bytes"])
    unaligned = sum(1 for a in data if a["torn"] and a["write_offset"] % align)
    print(f"{name:46} {len(cuts):4} {damaged:7} {lost:4} {failrec:7} {integ:6} {len(met):4}/{len(aims):<2} "
          f"{len(data):7} {sum(1 for a in data if a['torn']):12} {unaligned:9}  {secs / 60 / max(len(cuts), 1):7.2f}  "
          f"{len(cs)} rounds")
PY
}

echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $("$BIN" --version)"
for part in "${@:-postgres mariadb aligned summary}"; do
    for p in $part; do
        case $p in
        postgres) cells postgres full_page_writes off on ;;
        mariadb) cells mariadb innodb_doublewrite OFF ON ;;
        aligned) aligned ;;
        files-postgres) files postgres full_page_writes off on ;;
        files-mariadb) files mariadb innodb_doublewrite OFF ON ;;
        sqlite) sqlite_delete ;;
        summary) summary ;;
        *) echo "unknown part $p (postgres, mariadb, aligned, sqlite, summary)" >&2; exit 2 ;;
        esac
    done
done
