# Sourced by scripts/test and scripts/demo.
#
# require_packages PACKAGE...
#   Installs the given Debian packages (the ones the caller found missing) with apt-get when running as
#   root; otherwise prints the exact `sudo apt-get install` command and exits 1. No arguments: nothing
#   to do.
require_packages() {
    [ $# -gt 0 ] || return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "Installing $*…"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
    else
        echo "error: missing $*. Install with:" >&2
        echo "    sudo apt-get install -y $*" >&2
        exit 1
    fi
}
