#!/usr/bin/env bash
# The test command: installs what the integration tests need (Debian packages listed in .ci/deps/*.txt,
# only when running as root with apt-get available), then runs every test in the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
exec cargo test --workspace --all-features "$@"
