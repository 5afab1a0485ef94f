# Sourced by scripts/test (and usable by hand): a throwaway PostgreSQL server for the store tests.
#
# start_test_postgres [--durable]
#   Installs Debian's `postgresql` package when its binaries are missing (as root, with apt-get), creates
#   a cluster in a new temporary folder with initdb, run as an unprivileged user (PostgreSQL refuses to
#   run as root: `postgres` when it exists, else a `yxqueue-pg` user made for it), starts it on a free
#   port of 127.0.0.1 with its socket in that folder, and exports
#       YXQUEUE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
#   Without --durable the server trades crash safety for speed (fsync off), which tests do not need.
#   It also arranges for stop_test_postgres to run when the shell exits.
# stop_test_postgres
#   Stops the server and deletes its folder. Safe to call twice.

_yx_pg_bin=""
_yx_pg_dir=""
_yx_pg_user=""

# Runs a command as the cluster's user (directly when the shell is not root).
_yx_pg_as_user() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$_yx_pg_user" -- "$@"
    else
        "$@"
    fi
}

_yx_pg_find_bin() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        dirname "$(command -v initdb)"
        return 0
    fi
    return 1
}

_yx_pg_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start_test_postgres() {
    local durable=0
    [ "${1:-}" = "--durable" ] && durable=1
    if ! _yx_pg_bin="$(_yx_pg_find_bin)"; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "Installing postgresql…"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
            # Debian's package starts a system cluster; the tests use their own.
            _yx_pg_bin="$(_yx_pg_find_bin)" || { echo "error: postgresql installed but initdb not found" >&2; return 1; }
        else
            echo "error: PostgreSQL is missing. Install with:" >&2
            echo "    sudo apt-get install -y postgresql" >&2
            return 1
        fi
    fi
    if [ "$(id -u)" = 0 ]; then
        if id postgres >/dev/null 2>&1; then
            _yx_pg_user=postgres
        else
            _yx_pg_user=yxqueue-pg
            id "$_yx_pg_user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$_yx_pg_user"
        fi
    else
        _yx_pg_user="$(id -un)"
    fi
    _yx_pg_dir="$(mktemp -d "${TMPDIR:-/tmp}/yxqueue-pg.XXXXXX")"
    chmod 755 "$_yx_pg_dir"
    [ "$(id -u)" = 0 ] && chown "$_yx_pg_user" "$_yx_pg_dir"
    _yx_pg_as_user "$_yx_pg_bin/initdb" -D "$_yx_pg_dir/data" -U postgres --auth=trust --encoding=UTF8 \
        --locale=C.UTF-8 >"$_yx_pg_dir/initdb.log" 2>&1 || {
        cat "$_yx_pg_dir/initdb.log" >&2
        return 1
    }
    local port settings
    port="$(_yx_pg_free_port)"
    settings="-p $port -k $_yx_pg_dir -c listen_addresses=127.0.0.1 -c max_connections=200"
    if [ "$durable" = 0 ]; then
        settings="$settings -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    fi
    _yx_pg_as_user "$_yx_pg_bin/pg_ctl" -D "$_yx_pg_dir/data" -l "$_yx_pg_dir/server.log" -o "$settings" -w \
        start >/dev/null || {
        cat "$_yx_pg_dir/server.log" >&2
        return 1
    }
    export YXQUEUE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
    trap stop_test_postgres EXIT
    echo "PostgreSQL $("$_yx_pg_bin/postgres" --version | awk '{print $3}') for the tests: $YXQUEUE_TEST_POSTGRES_URL"
}

stop_test_postgres() {
    [ -n "$_yx_pg_dir" ] || return 0
    if [ -d "$_yx_pg_dir/data" ]; then
        _yx_pg_as_user "$_yx_pg_bin/pg_ctl" -D "$_yx_pg_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$_yx_pg_dir"
    _yx_pg_dir=""
}
