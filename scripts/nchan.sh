#!/usr/bin/env bash
# Nchan (Debian's nginx with libnginx-mod-nchan), the polling anchor of warren-bench.
#
#   scripts/nchan.sh install    install nginx-light and libnginx-mod-nchan with apt-get if missing
#   scripts/nchan.sh status     exit 0 if both are installed
#
# Only installs: warren-bench writes a private configuration per run, starts nginx in the
# foreground on 127.0.0.1 and stops it by its PID (systemd does not run on these machines,
# and the Debian package's own service is never started by this script).
set -euo pipefail

BIN=/usr/sbin/nginx
MODULE=/usr/lib/nginx/modules/ngx_nchan_module.so

log() { echo "nchan.sh: $*" >&2; }

installed() { [ -x "$BIN" ] && [ -f "$MODULE" ]; }

install_if_missing() {
    installed && return 0
    log "installing nginx-light and libnginx-mod-nchan with apt-get"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null
    # The package's post-install step may try to start nginx on port 80; it is not needed.
    $sudo apt-get install -y -qq -o Dpkg::Options::=--force-confdef nginx-light libnginx-mod-nchan >/dev/null || installed
    installed || { log "nginx or the nchan module is still missing after apt-get"; exit 1; }
    log "installed: $("$BIN" -v 2>&1)"
}

case "${1:-}" in
    install) install_if_missing ;;
    status) installed ;;
    *) echo "usage: $0 install|status" >&2; exit 2 ;;
esac
