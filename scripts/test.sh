#!/usr/bin/env bash
# The test command: installs what the integration tests need (Debian packages listed in .ci/deps/*.txt,
# only when running as root with apt-get available), then runs every test in the workspace and ends with
# one line totalling cargo test's "test result:" lines. Every test binary runs even after one fails
# (--no-fail-fast), so one failure hides no later result. cargo test's own output is shown as it comes and
# its exit code is this script's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
set +e
# Only stdout is copied (that is where the "test result:" lines go); stderr passes through untouched.
cargo test --workspace --all-features --no-fail-fast "$@" | tee "$log"
status=${PIPESTATUS[0]}
set -e
secs=$(($(date +%s) - start))
# "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.31s"
awk -v status="$status" -v secs="$secs" '
  /^test result: / {
    binaries++
    for (i = 1; i <= NF; i++) {
      if ($(i + 1) ~ /^passed;?$/) passed += $i
      if ($(i + 1) ~ /^failed;?$/) failed += $i
      if ($(i + 1) ~ /^ignored;?$/) ignored += $i
    }
  }
  END {
    note = (status != 0 && failed == 0) ? " (a build or a test binary failed before reporting: see above)" : ""
    printf "scripts/test.sh: %d passed, %d failed, %d ignored in %d test binaries; %dm%02ds; cargo test exit %d%s\n",
      passed, failed, ignored, binaries, secs / 60, secs % 60, status, note
  }' "$log"
exit "$status"
