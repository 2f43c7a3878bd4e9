#!/usr/bin/env bash
# A real PostgreSQL server for panes' JDBC sink tests and examples: a throw-away cluster in a folder of its own,
# listening on a free loopback port (127.0.0.1 only) and on a Unix socket in that folder.
#
#   bash scripts/postgres.sh start [DIR]   start a server whose files (data, log, password) are in DIR and print
#                                          its URL, postgresql://panes:PASSWORD@127.0.0.1:PORT/panes, alone on
#                                          standard output; a server already running in DIR is reused (its URL
#                                          printed again)
#   bash scripts/postgres.sh stop [DIR]    stop it (pg_ctl's fast shutdown) and remove DIR
#   bash scripts/postgres.sh status [DIR]  print "running <URL> (pid N)" and exit 0, or "not running", exit 1
#   bash scripts/postgres.sh install       install the server binaries when they are missing, nothing else
#
# DIR defaults to $PANES_POSTGRES_DIR, else <temp dir>/panes-postgres. The user `panes` is the cluster's superuser
# (it may create databases, which the tests do once per test) with a random password kept in DIR/password; over
# TCP the server asks for it (scram-sha-256), so clients exercise credentials. Durability is off (fsync,
# synchronous_commit): the cluster is for tests and dies with DIR.
#
# The server binaries are Debian's `postgresql` package (/usr/lib/postgresql/<version>/bin, the newest version
# there); when they are missing the package is installed (apt-get, as root or through sudo). PostgreSQL refuses to
# run as root: run as root, the script runs the server as the `postgres` system user the package creates (DIR is
# handed to that user). `start` waits up to $PANES_POSTGRES_START_TIMEOUT seconds (default 60) for the server to
# accept connections; when it does not, the end of its log goes to standard error and the exit code is 1.
# Needs python3 (to pick a free port and make the password).
set -euo pipefail

START_TIMEOUT=${PANES_POSTGRES_START_TIMEOUT:-60}
USER_NAME=panes
DATABASE=panes
MARK=.panes-postgres

say() { echo "postgres.sh: $*" >&2; }
fail() {
    say "$*"
    exit 1
}

server_dir() { echo "${1:-${PANES_POSTGRES_DIR:-${TMPDIR:-/tmp}/panes-postgres}}"; }

# -- the server binaries, installed when missing ------------------------------------------

bin_dir() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$found" ] && [ -x "$found/initdb" ] && [ -x "$found/pg_ctl" ]; then
        echo "$found"
    fi
}

install_server() {
    local root=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null ||
            fail "PostgreSQL's server is not installed and this user cannot install it: run" \
                "'apt-get install postgresql' as root (or install sudo), then start again"
        root="sudo"
    fi
    command -v apt-get >/dev/null ||
        fail "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/initdb) and there is no apt-get" \
            "to install it: install PostgreSQL's server with this system's package manager"
    say "installing Debian's postgresql package (once per machine)"
    local started=$SECONDS
    # the package's own cluster ('main') is not used; where services start at install, it may start on 5432
    if ! $root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null 2>"${TMPDIR:-/tmp}/panes-postgres-apt.log"; then
        $root apt-get update -qq >/dev/null 2>&1 || true
        $root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null 2>"${TMPDIR:-/tmp}/panes-postgres-apt.log" ||
            fail "apt-get install postgresql failed (its messages: ${TMPDIR:-/tmp}/panes-postgres-apt.log)"
    fi
    say "installed in $((SECONDS - started)) s"
}

# -- running as the server's user ------------------------------------------

# the user the server runs as: this one, or `postgres` when this is root
server_user() {
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 ||
            fail "running as root, and there is no 'postgres' user to run the server as (PostgreSQL refuses root);" \
                "install Debian's postgresql package, which creates it, or run as another user"
        echo postgres
    else
        id -un
    fi
}

as_server() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# -- state kept in DIR ------------------------------------------

url_of() {
    local dir=$1
    echo "postgresql://$USER_NAME:$(cat "$dir/password")@127.0.0.1:$(cat "$dir/port")/$DATABASE"
}

running_pid() {
    # the postmaster's pid when the server in $1 runs, else nothing
    local dir=$1 bin pid
    [ -f "$dir/data/postmaster.pid" ] || return 0
    pid=$(head -1 "$dir/data/postmaster.pid")
    bin=$(bin_dir)
    if [ -n "$bin" ] && as_server "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        echo "$pid"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# -- commands ------------------------------------------

start() {
    local dir bin user pid port ready
    dir=$(server_dir "${1:-}")
    if [ -n "$(running_pid "$dir")" ]; then
        url_of "$dir"
        return
    fi
    bin=$(bin_dir)
    if [ -z "$bin" ]; then
        install_server
        bin=$(bin_dir)
        [ -n "$bin" ] || fail "the postgresql package is installed but /usr/lib/postgresql/*/bin/initdb is not there"
    fi
    user=$(server_user)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    touch "$dir/$MARK"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        rm -rf "$dir/data"
        python3 -c 'import secrets; print(secrets.token_urlsafe(18))' >"$dir/password"
        chmod 600 "$dir/password"
        [ "$(id -u)" != 0 ] || chown -R postgres "$dir"
        as_server test -w "$dir" ||
            fail "the server's user '$user' cannot write to $dir (or a folder above it is closed to it):" \
                "give a DIR it can reach, e.g. under ${TMPDIR:-/tmp}"
        # the superuser `panes` with its password; TCP asks for it, the socket in DIR (closed to others) trusts
        if ! as_server "$bin/initdb" -D "$dir/data" -U "$USER_NAME" --pwfile="$dir/password" -E UTF8 --locale=C --no-sync \
            --auth-host=scram-sha-256 --auth-local=trust >"$dir/initdb.log" 2>&1; then
            tail -20 "$dir/initdb.log" >&2
            fail "initdb failed (its log: $dir/initdb.log)"
        fi
    fi
    [ "$(id -u)" != 0 ] || chown -R postgres "$dir"
    local attempt
    for attempt in 1 2 3; do
        port=$(free_port)
        echo "$port" >"$dir/port"
        # -w: pg_ctl waits until the server accepts connections (at most START_TIMEOUT seconds)
        if as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t "$START_TIMEOUT" \
            -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='$dir' \
                -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=50" \
            start >"$dir/pg_ctl.log" 2>&1; then
            break
        fi
        # another process may have taken the port between choosing it and binding it: choose again
        if ! grep -q "could not bind\|Address already in use" "$dir/server.log" 2>/dev/null || [ "$attempt" = 3 ]; then
            tail -20 "$dir/server.log" >&2 2>/dev/null || tail -20 "$dir/pg_ctl.log" >&2
            as_server "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
            fail "the server in $dir did not start within $START_TIMEOUT s (its log: $dir/server.log)"
        fi
    done
    # the database the URL names (the cluster starts with postgres, template0 and template1)
    ready=$(as_server "$bin/psql" -h "$dir" -p "$port" -U "$USER_NAME" -d postgres -Atqc \
        "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")
    if [ "$ready" != 1 ]; then
        as_server "$bin/psql" -h "$dir" -p "$port" -U "$USER_NAME" -d postgres -qc "CREATE DATABASE $DATABASE" >/dev/null
    fi
    say "PostgreSQL $(basename "$(dirname "$bin")") in $dir (log: $dir/server.log); stop it with: bash $0 stop $dir"
    url_of "$dir"
}

stop() {
    local dir bin
    dir=$(server_dir "${1:-}")
    [ -d "$dir" ] || return 0
    [ -f "$dir/$MARK" ] || fail "$dir was not made by $0 start: not stopping or removing it"
    bin=$(bin_dir)
    if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
        as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
            as_server "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

status() {
    local dir pid
    dir=$(server_dir "${1:-}")
    pid=$(running_pid "$dir")
    if [ -n "$pid" ]; then
        echo "running $(url_of "$dir") (pid $pid)"
    else
        echo "not running"
        return 1
    fi
}

# install the server binaries when they are missing (what `start` does first), and nothing else
install_if_missing() {
    [ -n "$(bin_dir)" ] || install_server
}

case "${1:-}" in
start | stop | status) "$1" "${2:-}" ;;
install) install_if_missing ;;
*)
    echo "usage: bash $0 start|stop|status [DIR] | install" >&2
    exit 2
    ;;
esac
