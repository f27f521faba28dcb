#!/usr/bin/env bash
# The test suite in a fresh clone with another build running beside it (issue #37's acceptance).
# Usage, as root: bash bench/suite_under_load.sh REPO OUT_FILE [LOAD_REPO]
#   REPO       the repository to clone (its main branch is tested)
#   OUT_FILE   where every `test result` line, the summary and the load each minute go
#   LOAD_REPO  optional: a repository whose clone is built in release mode from scratch, again and again,
#              while the suite runs (the "other build"); without it, whatever else runs is the load.
set -euo pipefail
repo=${1:?usage: suite_under_load.sh REPO OUT_FILE [LOAD_REPO]}
out=${2:?usage: suite_under_load.sh REPO OUT_FILE [LOAD_REPO]}
load_repo=${3:-}
work=$(mktemp -d /var/tmp/suite-under-load.XXXXXX)
loader=
cleanup() {
    [[ -n $loader ]] && kill -- -"$loader" 2>/dev/null || true
    rm -rf -- "$work"
}
trap cleanup EXIT
git clone -q "$repo" "$work/suite"
head=$(git -C "$work/suite" rev-parse --short HEAD)
if [[ -n $load_repo ]]; then
    git clone -q "$load_repo" "$work/load"
    set -m
    (cd "$work/load" && while true; do nice cargo build -q --release -p syncbench >/dev/null 2>&1; cargo clean -q; done) &
    loader=$!
    set +m
fi
(while true; do echo "load $(date -u +%H:%M) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 60; done) >"$work/load.txt" &
sampler=$!
start=$(date -u +%H:%M); t0=$(date +%s)
status=0
(cd "$work/suite" && SYNCBENCH_REQUIRE_ALL_TESTS=1 CI=true bash scripts/test.sh) >"$work/log.txt" 2>&1 || status=$?
t1=$(date +%s); kill "$sampler" 2>/dev/null || true
{
    echo "# suite in a fresh clone of $repo: SYNCBENCH_REQUIRE_ALL_TESTS=1 CI=true bash scripts/test.sh, as root"
    beside="whatever else ran"
    [[ -n $load_repo ]] && beside="a looping release build of $load_repo"
    echo "# main $head, $(date -u +%F) $start–$(date -u +%H:%M) UTC, beside: $beside"
    echo "# wall $(( (t1 - t0) / 60 )) min $(( (t1 - t0) % 60 )) s, exit $status"
    grep -E '^test result:|^scripts/test.sh:|FAILED|panicked' "$work/log.txt" || true
    cat "$work/load.txt"
} >"$out"
[[ $status -eq 0 ]] || cp "$work/log.txt" "$out.log"
exit "$status"
