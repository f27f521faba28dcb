# Sourced by the bench scripts (`. "$(dirname "$0")/lib.sh"`): the argument handling and setup they share.
# A script sets `usage` (its one usage line) before it calls usage_error, need_dir or bin_dir_out_args.

# The repository this file belongs to.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# usage_error [DETAIL]: the usage line with DETAIL appended as written (it brings its own separator, e.g.
# "; db_bench not found: …") on stderr, exit 2.
usage_error() {
  echo "$usage${1:-}" >&2
  exit 2
}

# need_dir ARG: ARG names an existing directory, or usage_error.
need_dir() {
  [ -d "${1:-}" ] || usage_error
}

# release_bin [PATH]: bin=PATH (by default the release build of this repository), built when missing.
release_bin() {
  bin=${1:-$repo/target/release/syncbench}
  [ -x "$bin" ] || (cd "$repo" && cargo build --release -q)
}

# exit_on_signals: Ctrl-C and SIGTERM exit (130, 143), so that the script's EXIT trap cleans up.
exit_on_signals() {
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# bin_dir_out_args BIN DIR OUT: the arguments of the repeat and calibration scripts, checked (BIN runs,
# DIR is a directory), as bin, dir and out; OUT is created and a line says what runs where, when, how loaded.
bin_dir_out_args() {
  [ $# -ge 3 ] || usage_error
  bin=$1 dir=$2 out=$3
  [ -x "$bin" ] || usage_error "; $bin is not an executable"
  [ -d "$dir" ] || usage_error "; $dir is not a directory"
  mkdir -p "$out"
  echo "bin: $bin ($("$bin" --version))  dir: $dir  load: $(cut -d' ' -f1-3 /proc/loadavg)  date: $(date -u +%FT%TZ)"
}

# disturb_if_listed I: when I is one of the run numbers in $disturb (" 3 6 9 "), start a writer of 64 KiB
# O_DSYNC writes into $dir for ~4 s, 1 s from now (flushes not ours, mid-run), in the background.
# disturb_pid is its pid, empty when run I is not disturbed.
disturb_if_listed() {
  disturb_pid=
  if [[ $disturb == *" $1 "* ]]; then
    ( sleep 1; timeout 4 dd if=/dev/zero of="$dir/.calib-dd" bs=64k count=100000 oflag=dsync status=none || true
      rm -f "$dir/.calib-dd" ) &
    disturb_pid=$!
  fi
}
