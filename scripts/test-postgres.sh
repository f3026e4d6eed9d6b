#!/usr/bin/env bash
# A throwaway PostgreSQL server for the memory tests, sourced by scripts/test.sh: Debian's
# `postgresql` package (installed with apt-get when missing), one cluster initialised into a
# temporary directory, listening on a Unix socket there and on a free loopback port with TLS (a
# test CA made here with openssl), torn down when the test command exits.
#
# Exports, for the tests:
#   META_AGENT_TEST_DATABASE_URL      superuser over the Unix socket, key=value form ending in
#                                     dbname=postgres (each test creates its own database)
#   META_AGENT_TEST_DATABASE_TCP_URL  a password role over loopback TCP, TLS available
#   META_AGENT_TEST_DATABASE_PASSWORD that role's password (the redaction tests look for it)
#   META_AGENT_TEST_DATABASE_CA       the CA that signed the server's certificate
#   META_AGENT_TEST_PG_REQUIRED=1     the PostgreSQL tests fail instead of skipping
#   META_AGENT_TEST_PG_BIN            the server's bin directory (for pg_ctl in tests)
# PG_TEST_DURABLE=1 keeps fsync and synchronous commits on (the benchmark's recording figures).
# PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user the
# package creates (or `nobody`), and the server runs through runuser.

pg_bindir() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ]; then echo "$dir"; fi
  done | sort -V | tail -n 1
}

pg_install() {
  if [ -n "$(pg_bindir)" ]; then return 0; fi
  echo "test-postgres: installing Debian's postgresql package" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "test-postgres: not root, cannot apt-get install postgresql" >&2
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends postgresql openssl >&2 \
    || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends postgresql openssl >&2; }
}

pg_as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$PG_TEST_OWNER" -- "$@"
  else
    "$@"
  fi
}

pg_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pg_make_certificates() {
  local dir=$1
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=meta-agent test CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,DNS:db.meta-agent.test,IP:127.0.0.1\n' >"$dir/san.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 2 -extfile "$dir/san.ext" -out "$dir/server.pem" 2>/dev/null
  chmod 600 "$dir/server.key"
}

pg_start() {
  local bin root port password
  bin=$(pg_bindir)
  if [ -z "$bin" ]; then return 1; fi
  PG_TEST_OWNER=$(id -un)
  if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then PG_TEST_OWNER=postgres; else PG_TEST_OWNER=nobody; fi
  fi
  root=$(mktemp -d /tmp/meta-agent-pg.XXXXXX)
  PG_TEST_ROOT=$root
  chmod 755 "$root"
  mkdir -p "$root/data" "$root/socket" "$root/tls"
  pg_make_certificates "$root/tls"
  chown -R "$PG_TEST_OWNER" "$root/data" "$root/socket" "$root/tls"
  chmod 777 "$root/socket"
  chmod 644 "$root/tls/ca.pem"
  password=$(python3 -c 'import secrets; print("pg-" + secrets.token_hex(16))')
  pg_as_owner "$bin/initdb" -D "$root/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >"$root/initdb.log" 2>&1 || { cat "$root/initdb.log" >&2; return 1; }
  port=$(pg_free_port)
  cat >>"$root/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$root/socket'
ssl = on
ssl_cert_file = '$root/tls/server.pem'
ssl_key_file = '$root/tls/server.key'
max_connections = 200
CONF
  if [ "${PG_TEST_DURABLE:-0}" != "1" ]; then
    # Tests need no durability: a throwaway cluster, faster without fsync.
    printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' >>"$root/data/postgresql.conf"
  fi
  pg_as_owner "$bin/pg_ctl" -D "$root/data" -l "$root/data/server.log" -w -t 60 start >/dev/null \
    || { cat "$root/data/server.log" >&2; return 1; }
  "$bin/psql" -q -h "$root/socket" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE meta_agent LOGIN CREATEDB PASSWORD '$password'" \
    -c "CREATE DATABASE meta_agent OWNER meta_agent" >/dev/null || return 1
  export META_AGENT_TEST_DATABASE_URL="host=$root/socket port=$port user=postgres dbname=postgres"
  export META_AGENT_TEST_DATABASE_TCP_URL="postgresql://meta_agent@127.0.0.1:$port/meta_agent"
  export META_AGENT_TEST_DATABASE_PASSWORD=$password
  export META_AGENT_TEST_DATABASE_CA=$root/tls/ca.pem
  export META_AGENT_TEST_PG_BIN=$bin
  echo "test-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $root/socket and 127.0.0.1:$port" >&2
}

pg_stop() {
  if [ -n "${PG_TEST_ROOT:-}" ] && [ -d "$PG_TEST_ROOT/data" ]; then
    pg_as_owner "$(pg_bindir)/pg_ctl" -D "$PG_TEST_ROOT/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_TEST_ROOT"
  fi
}
