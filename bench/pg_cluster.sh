# Sourced by the PostgreSQL bench scripts: one throwaway cluster for pgbench.
# pg_cluster_start WORK PORT initialises WORK/data (WORK must exist and belong to postgres), configures it
# (socket in WORK only, fsync/synchronous_commit/full_page_writes on, 256 MB shared buffers, no checkpoint
# during a run), starts it and loads pgbench at scale 10. pgbin must be set.

# The newest installed server's bin directory, or nothing (no match must not end a script under pipefail).
find_pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true; }
as_pg() { runuser -u postgres -- "$@"; }

pg_cluster_start() {
  pg_work=$1 pg_port=$2
  as_pg "$pgbin/initdb" -D "$pg_work/data" -A trust >/dev/null
  cat >>"$pg_work/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$pg_work'
port = $pg_port
fsync = on
synchronous_commit = on
full_page_writes = on
shared_buffers = 256MB
max_wal_size = 4GB
checkpoint_timeout = 30min
CONF
  as_pg "$pgbin/pg_ctl" -D "$pg_work/data" -l "$pg_work/log" -w start >/dev/null
  as_pg "$pgbin/pgbench" -h "$pg_work" -p "$pg_port" -i -s 10 -q postgres >/dev/null 2>&1
}
psql_() { as_pg "$pgbin/psql" -h "$pg_work" -p "$pg_port" -d postgres -qtAX -c "$1"; }
# pgbench_ ARGS...: pgbench against the cluster, no vacuum; prints pgbench's output.
pgbench_() { as_pg "$pgbin/pgbench" -h "$pg_work" -p "$pg_port" -n "$@" postgres 2>/dev/null; }
pg_cluster_stop() { [ -n "${pg_work:-}" ] && as_pg "$pgbin/pg_ctl" -D "$pg_work/data" -m immediate stop >/dev/null 2>&1 || true; }
# pg_use_method M: set wal_sync_method, reload, and checkpoint so every run starts with full-page images.
pg_use_method() { psql_ "ALTER SYSTEM SET wal_sync_method = '$1'" && psql_ "SELECT pg_reload_conf()" >/dev/null && psql_ CHECKPOINT; }
