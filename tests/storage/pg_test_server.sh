#!/bin/sh
# A private PostgreSQL 15 server for the tests, from Debian's binaries:
#   pg_test_server.sh start DIR   initdb into DIR/data and start it, listening only on a Unix
#                                 socket in DIR (no TCP port); its superuser role is "trainctl",
#                                 trusted on that socket
#   pg_test_server.sh restart DIR stop it (-m fast: its sessions end) and start it again
#   pg_test_server.sh stop DIR    stop it (pg_ctl stop -m fast, by its postmaster.pid) and
#                                 remove DIR
# PG_TEST_FSYNC=on makes its commits durable (for measurements; tests run without fsync). As
# root (CI), the server runs as the unprivileged user nobody (initdb refuses root), and DIR
# is made theirs. PG_BIN overrides /usr/lib/postgresql/15/bin. Fails loudly when PostgreSQL is not
# installed: apt-get install postgresql (deploy/install-deps.sh does), or configure with
# -DTRAINCTL_PG_TESTS=OFF to leave the PostgreSQL tests out locally.
set -eu
cmd=$1
dir=$2
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
as_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}
case "$cmd" in
  start)
    if [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ]; then
      echo "pg_test_server.sh: PostgreSQL 15 is not installed ($bin/initdb): apt-get install" \
           "postgresql, or configure with -DTRAINCTL_PG_TESTS=OFF to skip these tests" >&2
      exit 1
    fi
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    chmod 0755 "$dir"
    if [ "$(id -u)" = 0 ]; then chown nobody "$dir"; fi
    as_user "$bin/initdb" -D "$dir/data" -U trainctl --auth=trust --no-sync -E UTF8 \
      --locale=C >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=${PG_TEST_FSYNC:-off} \
          -c full_page_writes=${PG_TEST_FSYNC:-off} -c max_connections=300 -c shared_buffers=32MB" \
      start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    echo "PostgreSQL test server on $dir"
    ;;
  restart)
    as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >/dev/null
    ;;
  stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_user "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: pg_test_server.sh start|restart|stop DIR" >&2
    exit 2
    ;;
esac
