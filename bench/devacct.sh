#!/usr/bin/env bash
# Device accounting benchmarks (issue #19), as root:
#   counts  flushes, write requests and bytes per commit for every method of run's sections a and b on
#           ext4 (DIR, this machine's disk) and on xfs and btrfs (loop devices over files in /var/tmp)
#   bg      fdatasync's commit latency idle vs under background writes at 50 MiB/s and max, on ext4 and xfs,
#           ROUNDS rounds alternating the two rates (each run measures idle then under the writer)
#   exact   on a `syncbench lab` disk (zero profile, ext4): every case of `run --quick` against the lab
#           device's own counters over the same window (writes and flushes exactly, bytes within a block)
#   cost    the timed loop with accounting (this build) against main's build (BASE), alternately: the
#           `write` and `direct` cases on ext4 over a loop device on tmpfs (direct reaches the device:
#           every request passes the block tracepoints)
# Usage: bench/devacct.sh OUT [counts|bg|cost]...   env: BIN (this build), BASE (main's build), DIR
#        (an ext4 directory on the disk, default /var/tmp/devacct), ROUNDS (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1; shift
parts=${*:-counts bg cost}
bin=${BIN:-$PWD/target/release/syncbench}
base=${BASE:-/tmp/syncbench-main}
dir=${DIR:-/var/tmp/devacct}
rounds=${ROUNDS:-3}
mkdir -p "$out" "$dir"
work=$(mktemp -d /var/tmp/devacct-bench.XXXXXX)
cleanup() {
  for m in "$work"/mnt-*; do umount "$m" 2>/dev/null || true; done
  # loopfs runs in a subshell ($(...)): find its loop devices by their backing files.
  losetup -a | grep -F "$work/" | cut -d: -f1 | while read -r l; do losetup -d "$l" || true; done
  umount "$work/tmpfs" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
load() { echo "load $(cut -d' ' -f1-3 /proc/loadavg)"; }

# A file system of type $1 on a loop device over a file in $2; prints its mount point.
loopfs() {
  local fs=$1 where=$2 img mnt dev
  img=$(mktemp -p "$where" img.XXXXXX); mnt=$work/mnt-$fs-$(basename "$img")
  truncate -s 1G "$img"; mkdir -p "$mnt"
  dev=$(losetup --find --show "$img")
  case $fs in
    xfs) mkfs.xfs -q -f "$dev" ;;
    btrfs) mkfs.btrfs -q -f "$dev" >/dev/null ;;
    ext4) mkfs.ext4 -q -F "$dev" ;;
  esac
  mount "$dev" "$mnt"; echo "$mnt"
}

summary_counts() {
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    env = d["environment"]
    chain = " → ".join(x["name"] for x in env.get("devices", []))
    print(f"\n{path}: {env.get('fs_type')} on {chain}")
    print(f"  {'section':<10} {'method':<22} {'commits':>7} {'flush/c':>7} {'write/c':>7} {'KiB/c':>7} {'dev µs/c':>8} {'fua':>4}  note")
    for r in d["results"]:
        dv = r.get("device")
        if not dv or not dv.get("devices"):
            continue
        top, low = dv["devices"][0], dv["devices"][-1]
        n = max(dv["commits"], 1)
        q = top.get("requests") or {}
        w = q.get("writes", {}).get("count", top["stat"]["writes"])
        dev = dv.get("device_ns_per_commit")
        note = "other I/O: counts include it" if dv.get("unattributable") else ""
        print(f"  {r['section']:<10} {r['label'].strip():<22} {n:>7} {top['stat']['flushes']/n:>7.2f} {w/n:>7.2f} "
              f"{top['stat']['write_bytes']/n/1024:>7.1f} {(dev or 0)/1000:>8.0f} {q.get('fua_writes', 0):>4}  {note}")
PY
}

if [[ " $parts " == *" exact "* ]]; then
  mkdir -p "$work/lab"
  "$bin" lab up --profile zero --size 512MiB "$work/lab" > /dev/null
  # I/O that is not a case's (a fresh ext4 zeroing its inode tables, jbd2 committing the mtime fdatasync
  # left dirty every 5 s) is counted by the kernel and the lab at different moments when it straddles a
  # window's edge: stop ext4lazyinit, keep timestamps until a sync (lazytime), commit every 600 s.
  mount -o remount,noinit_itable,lazytime,commit=600 "$work/lab"
  load | tee "$out/exact-summary.txt"
  "$bin" run "$work/lab" --quick --json "$out/exact-lab-zero-ext4.json" > "$out/exact-lab-zero-ext4.txt" || true
  "$bin" lab down "$work/lab" > /dev/null
  python3 - "$out/exact-lab-zero-ext4.json" <<'PY' | tee -a "$out/exact-summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
same = differ = 0
for r in d["results"]:
    dv = r.get("device")
    if not dv or r["ops"] == 0:
        continue
    low, lab = dv["devices"][-1], dv["emulated"]
    got = (low["requests"]["writes"]["count"], low["stat"]["flushes"], low["stat"]["write_bytes"])
    ok = got[0] == lab["writes"] and got[1] == lab["flushes"] and abs(got[2] - lab["write_bytes"]) <= 4096
    same, differ = same + ok, differ + (not ok)
    if not ok:
        print(f"DIFFERS {r['section']} {r['label'].strip()}: {got} vs lab {lab}")
print(f"{same} cases equal the lab's counters, {differ} differ")
PY
fi

if [[ " $parts " == *" counts "* ]]; then
  load | tee "$out/counts-load.txt"
  "$bin" run "$dir" --quick --sections a,b --json "$out/counts-ext4.json" > "$out/counts-ext4.txt"
  for fs in xfs btrfs; do
    m=$(loopfs "$fs" "$work")
    "$bin" run "$m" --quick --sections a,b --json "$out/counts-$fs.json" > "$out/counts-$fs.txt"
  done
  load | tee -a "$out/counts-load.txt"
  summary_counts "$out"/counts-{ext4,xfs,btrfs}.json | tee "$out/counts-summary.txt"
fi

if [[ " $parts " == *" bg "* ]]; then
  xfs=$(loopfs xfs "$work")
  : > "$out/bg-summary.txt"
  for i in $(seq "$rounds"); do
    for target in "ext4:$dir" "xfs:$xfs"; do
      for rate in 50MiB/s max; do
        name=bg-${target%%:*}-${rate%%/*}-$i
        echo "$name $(load)" | tee -a "$out/bg-summary.txt"
        "$bin" run "${target#*:}" --sections a --methods fdatasync --secs 2 --rounds 2 --background-writes "$rate" \
          --json "$out/$name.json" > "$out/$name.txt"
        python3 - "$out/$name.json" <<'PY' | tee -a "$out/bg-summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
a, b = d["results"][0], d["background_writes"]["results"][0]
w = d["background_writes"]["writer"]
def fl(c):
    dv = c.get("device") or {}
    n = max(dv.get("commits", 0), 1)
    return dv["devices"][0]["stat"]["flushes"] / n if dv.get("devices") else float("nan")
print(f"  fdatasync p50 {a['latency_ns']['p50']/1000:.0f} -> {b['latency_ns']['p50']/1000:.0f} µs, "
      f"p99 {a['latency_ns']['p99']/1000:.0f} -> {b['latency_ns']['p99']/1000:.0f} µs, "
      f"flush/c {fl(a):.2f} -> {fl(b):.2f}, writer {w['bytes_per_s']/2**20:.1f} MiB/s")
PY
      done
    done
  done
fi

if [[ " $parts " == *" cost "* ]]; then
  mkdir -p "$work/tmpfs"; mount -t tmpfs -o size=1200m tmpfs "$work/tmpfs"
  m=$(loopfs ext4 "$work/tmpfs")
  echo "round  method  main_ops_per_s  this_ops_per_s  ratio  $(load)" | tee "$out/cost-summary.txt"
  for i in $(seq "$rounds"); do
    for method in write direct; do
      ops() { chrt -f 50 "$1" run "$m" --sections a --methods "$method" --secs 2 --rounds 1 --json - 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["ops_per_s"])'; }
      a=$(ops "$base"); b=$(ops "$bin")
      python3 -c "print(f'$i  $method  {$a:.0f}  {$b:.0f}  {$b/$a:.3f}')" | tee -a "$out/cost-summary.txt"
    done
  done
  load | tee -a "$out/cost-summary.txt"
fi
