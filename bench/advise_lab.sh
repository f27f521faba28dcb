#!/usr/bin/env bash
# Run one of the advise validation scripts on an emulated disk of `syncbench lab`: brings a lab disk of
# PROFILE up on MOUNT (an empty directory, created if missing), runs SCRIPT MOUNT ARGS..., and takes the lab
# down and removes MOUNT again on exit, error, Ctrl-C or SIGTERM.
#
# usage: bench/advise_lab.sh PROFILE MOUNT SCRIPT [ARGS...]
#   e.g. bench/advise_lab.sh hdd-7200 /var/tmp/advrocks/hdd bench/advise_rocksdb.sh 10 4
# needs: root, /dev/fuse, a release build of syncbench (built when missing). FS=xfs|btrfs picks the file
# system (default ext4).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 PROFILE MOUNT SCRIPT [ARGS...] (PROFILE: see \`syncbench lab profiles\`; MOUNT: a new or empty directory; SCRIPT: bench/advise_*.sh)"
[ $# -ge 3 ] || usage_error
profile=$1 mnt=$2 script=$3
shift 3
release_bin
[ -x "$script" ] || usage_error "; $script is not an executable script"
"$bin" lab profiles | grep -q "^$profile " || usage_error "; unknown profile $profile"
made=""
if [ ! -e "$mnt" ]; then mkdir -p "$mnt"; made=1; fi
[ -d "$mnt" ] && [ -z "$(ls -A "$mnt")" ] || usage_error "; $mnt is not an empty directory"
up=""
cleanup() {
  [ -n "$up" ] && "$bin" lab down "$mnt" >/dev/null 2>&1 || true
  [ -n "$made" ] && rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT
exit_on_signals
"$bin" lab up --profile "$profile" --fs "${FS:-ext4}" "$mnt" >/dev/null
up=1
echo "# lab disk: profile $profile, ${FS:-ext4} on $mnt ($("$bin" lab profiles | grep -A0 "^$profile " | tr -s ' '))"
"$script" "$mnt" "$@"
