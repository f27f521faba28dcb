# Sourced by bench/advise_mariadb.sh: a private mariadbd on a datadir of our own (never the system service).
# mariadb_init WORK; mariadb_start METHOD [EXTRA_OPTION...]; mariadb_stop. Needs root (runs as mysql).

mariadb_init() {
  maria_work=$1
  mkdir -p "$maria_work/data"
  chown -R mysql: "$maria_work"
  mariadb-install-db --no-defaults --user=mysql --datadir="$maria_work/data" --auth-root-authentication-method=socket \
    --skip-test-db >"$maria_work/install.log" 2>&1 || { cat "$maria_work/install.log" >&2; return 1; }
}

# Start with innodb_flush_log_at_trx_commit=1 and the given innodb_flush_method; wait until it answers.
mariadb_start() {
  local method=$1
  shift
  mariadbd --no-defaults --user=mysql --datadir="$maria_work/data" --socket="$maria_work/sock" \
    --pid-file="$maria_work/mariadbd.pid" --skip-networking --log-error="$maria_work/error.log" \
    --innodb-flush-log-at-trx-commit=1 --innodb-flush-method="$method" --innodb-buffer-pool-size=256M \
    --innodb-log-file-size=256M --max-connections=64 "$@" >>"$maria_work/stderr.log" 2>&1 &
  maria_pid=$!
  local i
  for i in $(seq 1 600); do
    if mariadb --no-defaults -uroot --socket="$maria_work/sock" -e 'select 1' >/dev/null 2>&1; then return 0; fi
    kill -0 "$maria_pid" 2>/dev/null || { tail -5 "$maria_work/error.log" >&2; return 1; }
    sleep 0.1
  done
  echo "mariadbd did not answer within 60 s (see $maria_work/error.log)" >&2
  return 1
}

mariadb_stop() {
  [ -n "${maria_pid:-}" ] || return 0
  kill -TERM "$maria_pid" 2>/dev/null || true
  wait "$maria_pid" 2>/dev/null || true
  maria_pid=
}

maria_sql() { mariadb --no-defaults -uroot --socket="$maria_work/sock" "$@"; }
