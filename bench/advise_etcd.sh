#!/usr/bin/env bash
# Validate `syncbench advise --for etcd` against etcd 3.4 itself. A private single-member etcd (Debian's
# etcd-server) keeps its data in DIR/.syncbench-etcdval-PID; in alternating rounds (the order flips every
# round) advise measures DIR (its verdict and predicted p99 of a 2300-byte write + fdatasync into a
# preallocated file) and one client puts 2000-byte values for SECONDS through etcd's HTTP gateway, one
# request at a time, while etcd's own histogram etcd_disk_wal_fsync_duration_seconds (its /metrics) is read
# before and after: its p99 over the window (interpolated within the bucket as Prometheus'
# histogram_quantile does; buckets are 1, 2, 4, 8, 16 ms ...) and the share of WAL syncs at most 8 and 16 ms.
# Last, `etcdctl check perf` (60 s, load s: 50 clients) with the histogram read around it too.
#
# usage: bench/advise_etcd.sh DIR [SECONDS] [ROUNDS] [PORT]   (defaults 20 s, 4 rounds, 23790: client
# PORT, peer PORT+1, both on 127.0.0.1)
# needs: etcd and etcdctl 3.4 (installs etcd-server and etcd-client with apt-get when missing and run as
# root), python3, a release build of syncbench (built when missing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 DIR [SECONDS] [ROUNDS] [PORT] (DIR: an existing directory on the file system to test)"
need_dir "${1:-}"
dir=$(realpath "$1")
secs=${2:-20} rounds=${3:-4} port=${4:-23790}
if ! { command -v etcd && command -v etcdctl; } >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing etcd from the distribution's packages (apt-get install etcd-server etcd-client)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null
fi
{ command -v etcd && command -v etcdctl; } >/dev/null || usage_error "; etcd/etcdctl not found: apt-get install etcd-server etcd-client (as root)"
release_bin

work="$dir/.syncbench-etcdval-$$"
client=http://127.0.0.1:$port peer=http://127.0.0.1:$((port + 1))
etcd_pid=""
mkdir "$work"
cleanup() {
  if [ -n "$etcd_pid" ]; then kill "$etcd_pid" 2>/dev/null || true; wait "$etcd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
exit_on_signals
# etcd's data on DIR, advise's test files beside it (advise measures its own subdirectory, not etcd's files).
mkdir "$work/advise"
etcd --name val --data-dir "$work/data" --listen-client-urls "$client" --advertise-client-urls "$client" \
  --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "val=$peer" \
  >"$work/etcd.log" 2>&1 &
etcd_pid=$!
for _ in $(seq 300); do ETCDCTL_API=3 etcdctl --endpoints "$client" endpoint health >/dev/null 2>&1 && break; sleep 0.2; done
ETCDCTL_API=3 etcdctl --endpoints "$client" endpoint health >/dev/null 2>&1 || { echo "etcd did not start: $(tail -3 "$work/etcd.log")" >&2; exit 1; }
hist() { curl -sf "$client/metrics" | grep '^etcd_disk_wal_fsync_duration_seconds_bucket' >"$work/$1"; }
# p99 and shares of a histogram delta: ms, share<=8ms, share<=16ms, count.
delta() {
  python3 - "$work/$1" "$work/$2" <<'PY'
import re, sys
def load(p):
    return {float(m.group(1)): float(v) for line in open(p)
            for m, v in [(re.search(r'le="([^"]+)"', line), line.split()[-1])]}
a, b = load(sys.argv[1]), load(sys.argv[2])
les = sorted(b)
d = [(le, b[le] - a.get(le, 0.0)) for le in les]
n = d[-1][1]
if n <= 0:
    print("nan nan nan 0"); sys.exit()
rank, lo, prev = 0.99 * n, 0.0, 0.0
for le, c in d:
    if c >= rank:
        p99 = le if le == float("inf") else lo + (le - lo) * (rank - prev) / max(c - prev, 1e-9)
        break
    lo, prev = le, c
share = lambda x: dict(d)[x] / n
print(f"{p99 * 1e3:.2f} {share(0.008):.4f} {share(0.016):.4f} {n:.0f}")
PY
}
# put loop: one client, one request at a time, 2000-byte values, for SECS seconds; prints puts/s.
load() {
  python3 - "$client" "$secs" <<'PY'
import base64, http.client, json, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); secs = float(sys.argv[2])
c = http.client.HTTPConnection(u.hostname, u.port)
val = base64.b64encode(b"v" * 2000).decode()
n, t0 = 0, time.monotonic()
while time.monotonic() - t0 < secs:
    body = json.dumps({"key": base64.b64encode(b"k%d" % (n % 1000)).decode(), "value": val})
    c.request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status != 200: sys.exit(f"put failed: HTTP {r.status}")
    n += 1
print(f"{n / (time.monotonic() - t0):.1f}")
PY
}
advise() {
  "$bin" advise "$work/advise" --for etcd:3.4 --json "$work/advice.json" >"$work/advice.txt" || true
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
a = [a for a in d["advice"] if a["database"] == "etcd"][0]
c = [c for c in d["results"] if c["write_size_bytes"] == 2300][0]
verdict = "PASS" if a["pass"] else "FAIL"
print("%.2f %s %d" % (c["latency_ns"]["p99"] / 1e6, verdict, c["ops"]))' "$work/advice.json"
}
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores; $(etcd --version | head -1); $(findmnt -no FSTYPE,SOURCE -T "$dir") ($dir); puts ${secs}s per round, $rounds rounds"
for round in $(seq 1 "$rounds"); do
  for step in $( ((round % 2)) && echo "advise etcd" || echo "etcd advise"); do
    if [ "$step" = advise ]; then
      read -r ap99 averdict aops <<<"$(advise)"
    else
      hist h0; rate=$(load); hist h1
      read -r ep99 e8 e16 en <<<"$(delta h0 h1)"
    fi
  done
  everdict=$(python3 -c "print('PASS' if float('$ep99') < 10 else 'FAIL')")
  echo "round $round advise p99 ${ap99} ms $averdict ($aops syncs); etcd wal_fsync p99 ${ep99} ms $everdict ($en syncs, ${rate} puts/s, <=8ms $e8, <=16ms $e16) load $(cut -d' ' -f1 /proc/loadavg)"
done
echo "advise's etcd verdict (last round): $(grep -A3 -i '^etcd' "$work/advice.txt" | head -4 | tr -s ' ' | tr '\n' ' ')"
hist c0
ETCDCTL_API=3 etcdctl --endpoints "$client" check perf --load=s 2>&1 | grep -E 'PASS|FAIL' | sed 's/^/check perf: /' || true
hist c1
read -r cp99 c8 c16 cn <<<"$(delta c0 c1)"
echo "check perf window: etcd wal_fsync p99 ${cp99} ms ($cn syncs, <=8ms $c8, <=16ms $c16) load $(cut -d' ' -f1 /proc/loadavg)"
