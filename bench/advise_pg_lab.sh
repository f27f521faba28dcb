#!/usr/bin/env bash
# bench/advise_pgbench.sh on an emulated disk of `syncbench lab` (bench/advise_lab.sh brings it up on MOUNT
# and takes it down at exit): PostgreSQL's wal_sync_method, advise's pick against pgbench's best, on a disk
# whose truth (flush cost, FUA, write-through cache) is known.
#
# usage: bench/advise_pg_lab.sh PROFILE MOUNT [SECONDS_PER_RUN] [ROUNDS] [PORT]   (defaults 5 s, 5 rounds, 55432)
#   e.g. bench/advise_pg_lab.sh hdd-7200 /var/tmp/advrocks/pg-hdd
# needs: root, /dev/fuse, PostgreSQL (installed by advise_pgbench.sh when missing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
usage="usage: $0 PROFILE MOUNT [SECONDS] [ROUNDS] [PORT] (PROFILE: see \`syncbench lab profiles\`; MOUNT: a new or empty directory)"
[ $# -ge 2 ] || usage_error
exec "$repo/bench/advise_lab.sh" "$1" "$2" "$repo/bench/advise_pgbench.sh" "${3:-5}" "${4:-5}" "${5:-55432}"
