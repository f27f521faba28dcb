#!/usr/bin/env bash
# Install the Debian packages the integration tests use (one list per feature in .ci/deps/*.txt).
# Without root or apt-get it does nothing: the tests that need a package skip with a message saying so.
set -uo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
lists=(.ci/deps/*.txt)
[ ${#lists[@]} -gt 0 ] || exit 0
mapfile -t wanted < <(cat "${lists[@]}" | sed 's/#.*//' | tr -s ' \t' '\n' | sed '/^$/d' | sort -u)
[ ${#wanted[@]} -gt 0 ] || exit 0
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "install-test-deps: not root or no apt-get; tests needing ${missing[*]} will skip" >&2
  exit 0
fi
echo "install-test-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || true
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
  || echo "install-test-deps: apt-get install failed; tests needing ${missing[*]} will skip" >&2
exit 0
