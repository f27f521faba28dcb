#!/usr/bin/env bash
# Issue #36: `syncbench commit --clients 1,4,16,64 --commit-delay-us 0`, an older build (BEFORE) against a
# newer one (AFTER), alternating, ROUNDS rounds each, on lab disks (profile/fs pairs in LABS) and on plain
# directories (DIRS). Raw tables and JSON go to OUT; bench/groupcommit_summary.py prints the medians.
# Usage: bench/groupcommit_ab.sh BEFORE AFTER OUT   env: ROUNDS (3), LABS ("hdd-7200/ext4 ssd-200us/ext4"),
#        DIRS (/var/tmp), SECS (3). Root only for the lab (it mounts a FUSE-backed loop device).
set -euo pipefail
usage="usage: bench/groupcommit_ab.sh BEFORE AFTER OUT"
. "$(dirname "$0")/lib.sh"
[ $# -eq 3 ] || usage_error
before=$1 after=$2 out=$3
[ -x "$before" ] || usage_error "; $before is not an executable"
[ -x "$after" ] || usage_error "; $after is not an executable"
mkdir -p "$out"
exit_on_signals
mnt=$(mktemp -d /tmp/.syncbench-groupcommit-ab-XXXXXX)
trap '"$after" lab down "$mnt" >/dev/null 2>&1 || true; rmdir "$mnt" 2>/dev/null || true' EXIT
rounds=${ROUNDS:-3}
echo "before: $before ($("$before" --version))  after: $after ($("$after" --version))  $(nproc) cores, $(uname -r), load: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)" | tee -a "$out/README.txt"

# one_round WHERE DIR: both builds once, in an order that alternates with the round number.
one_round() {
  local where=$1 dir=$2 round=$3 order=(before after)
  ((round % 2)) && order=(after before)
  for which in "${order[@]}"; do
    local bin=$before
    [ "$which" = after ] && bin=$after
    local stem="$out/$where-$which-r$round"
    echo "$(date -u +%T) $where round $round $which (load $(cut -d' ' -f1 /proc/loadavg))"
    nice "$bin" commit "$dir" --clients 1,4,16,64 --commit-delay-us 0 --secs "${SECS:-3}" --json "$stem.json" >"$stem.txt" 2>&1
  done
}

for lab in ${LABS-hdd-7200/ext4 ssd-200us/ext4}; do
  profile=${lab%/*} fs=${lab#*/}
  "$after" lab up --profile "$profile" --fs "$fs" "$mnt" >/dev/null
  for r in $(seq 1 "$rounds"); do one_round "lab-$profile-$fs" "$mnt" "$r"; done
  "$after" lab down "$mnt" >/dev/null
done
for dir in ${DIRS-/var/tmp}; do
  name=$(echo "$dir" | tr / _)
  for r in $(seq 1 "$rounds"); do one_round "dir$name" "$dir" "$r"; done
done
python3 "$repo/bench/groupcommit_summary.py" "$out" | tee "$out/summary.md"
