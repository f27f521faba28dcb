#!/usr/bin/env bash
# Render a syncbench report in headless Chromium and screenshot the page and every chart, to check by eye (or
# in CI) that the HTML and each SVG render with visible data.
#
#   bench/screenshot.sh OUTDIR RUN.json [MORE.json ...]
#
# Writes OUTDIR/report.html, OUTDIR/svg/*.svg (syncbench report --svg), OUTDIR/png/page.png (the top of the
# page) and OUTDIR/png/<chart>.png (each chart at its own size). Needs the Debian package `chromium`;
# set SYNCBENCH to the binary to use (default: target/debug/syncbench, built if missing).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OUTDIR RUN.json [MORE.json ...]" >&2; exit 2; }
out=$1; shift
root="$(cd "$(dirname "$0")/.." && pwd)"
bin=${SYNCBENCH:-$root/target/debug/syncbench}
[ -x "$bin" ] || (cd "$root" && cargo build -q -p syncbench)
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "screenshot: chromium not found (apt-get install chromium)" >&2; exit 3; }

mkdir -p "$out/png"
"$bin" report "$@" -o "$out/report.html" --svg "$out/svg"

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
shoot() { # URL PNG WIDTH,HEIGHT
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$profile" --screenshot="$2" --window-size="$3" "$1" >/dev/null 2>&1
  [ -s "$2" ] || { echo "screenshot: chromium wrote no $2" >&2; exit 1; }
}

shoot "file://$(realpath "$out/report.html")" "$out/png/page.png" 840,2400
count=0
for svg in "$out"/svg/*.svg; do
  # The chart's own size, from <svg width=".." height="..">.
  width=$(grep -o -m1 '<svg[^>]* width="[0-9.]*"' "$svg" | sed 's/.* width="\([0-9.]*\)"/\1/')
  height=$(grep -o -m1 '<svg[^>]* height="[0-9.]*"' "$svg" | sed 's/.* height="\([0-9.]*\)"/\1/')
  shoot "file://$(realpath "$svg")" "$out/png/$(basename "$svg" .svg).png" "${width%.*},${height%.*}"
  count=$((count + 1))
done
echo "screenshot: $out/png/page.png and $count chart screenshots in $out/png/"
