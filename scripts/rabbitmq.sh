#!/usr/bin/env bash
# A private local RabbitMQ for Warren's development, tests and demo.
#
#   scripts/rabbitmq.sh start     install rabbitmq-server if missing, start a node if none answers, wait for AMQP
#   scripts/rabbitmq.sh stop      stop the node this script started
#   scripts/rabbitmq.sh restart   stop, then start (same data: durable queues survive)
#   scripts/rabbitmq.sh ctl ARGS  run rabbitmqctl against the node (e.g. ctl close_all_connections bye)
#   scripts/rabbitmq.sh status    exit 0 if the broker answers on AMQP
#
# systemd does not run on the machines this targets, so the node is started by hand
# under setsid, with every path in a private directory and every listener on 127.0.0.1.
set -euo pipefail

DIR="${WARREN_RABBITMQ_DIR:-/tmp/warren-rabbitmq}"
AMQP_PORT="${WARREN_RABBITMQ_PORT:-5672}"
BIN=/usr/lib/rabbitmq/bin

export HOME="$DIR/home"
export RABBITMQ_NODENAME=rabbit@localhost
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT="$AMQP_PORT"
export RABBITMQ_DIST_PORT="${WARREN_RABBITMQ_DIST_PORT:-25672}"
export RABBITMQ_MNESIA_BASE="$DIR/mnesia"
export RABBITMQ_LOG_BASE="$DIR/log"
export RABBITMQ_CONFIG_FILE="$DIR/rabbitmq.conf"
export RABBITMQ_ADVANCED_CONFIG_FILE="$DIR/advanced.config"
export RABBITMQ_CONF_ENV_FILE="$DIR/rabbitmq-env.conf"
export RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/enabled_plugins"
export RABBITMQ_PID_FILE="$DIR/rabbit.pid"
export RABBITMQ_LOGS="$DIR/log/rabbit.log"
export ERL_EPMD_ADDRESS=127.0.0.1

log() { echo "rabbitmq.sh: $*" >&2; }

answers() {
    # A TCP accept on the AMQP port, then the broker's reply to the protocol header.
    timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$AMQP_PORT && printf 'AMQP\x00\x00\x09\x01' >&3 && head -c 1 <&3 >/dev/null" 2>/dev/null
}

install_if_missing() {
    [ -x "$BIN/rabbitmq-server" ] && return 0
    log "installing rabbitmq-server with apt-get"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y -qq rabbitmq-server >/dev/null
}

# A CA and a server certificate (for localhost and 127.0.0.1) made with openssl, so the
# tests can reach the broker over TLS (amqps://127.0.0.1:5671) and verify it.
make_certs() {
    local t="$DIR/tls"
    [ -s "$t/server.pem" ] && return 0
    command -v openssl >/dev/null || { [ "$(id -u)" -eq 0 ] && apt-get install -y -qq openssl >/dev/null || sudo apt-get install -y -qq openssl >/dev/null; }
    mkdir -p "$t"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=Warren test CA" \
        -keyout "$t/ca.key" -out "$t/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$t/server.key" -out "$t/server.csr" 2>/dev/null
    printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" > "$t/ext.cnf"
    openssl x509 -req -in "$t/server.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial -days 3650 \
        -extfile "$t/ext.cnf" -out "$t/server.pem" 2>/dev/null
    chmod 644 "$t"/*
}

write_config() {
    mkdir -p "$HOME" "$RABBITMQ_MNESIA_BASE" "$RABBITMQ_LOG_BASE"
    make_certs
    : > "$RABBITMQ_CONF_ENV_FILE"
    cat > "$RABBITMQ_CONFIG_FILE" <<CONF
listeners.tcp.default = 127.0.0.1:$AMQP_PORT
listeners.ssl.default = 127.0.0.1:${WARREN_RABBITMQ_TLS_PORT:-5671}
ssl_options.cacertfile = $DIR/tls/ca.pem
ssl_options.certfile = $DIR/tls/server.pem
ssl_options.keyfile = $DIR/tls/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
management.tcp.ip = 127.0.0.1
management.tcp.port = ${WARREN_RABBITMQ_MGMT_PORT:-15672}
web_stomp.tcp.ip = 127.0.0.1
web_stomp.tcp.port = ${WARREN_RABBITMQ_STOMP_PORT:-15674}
stomp.listeners.tcp.1 = 127.0.0.1:${WARREN_RABBITMQ_PLAIN_STOMP_PORT:-61613}
log.console = false
log.file.level = warning
CONF
    # Erlang distribution on loopback only.
    echo "[{kernel, [{inet_dist_use_interface, {127,0,0,1}}]}]." > "$RABBITMQ_ADVANCED_CONFIG_FILE"
    "$BIN/rabbitmq-plugins" enable --offline rabbitmq_management rabbitmq_web_stomp >/dev/null
}

start() {
    if answers; then
        log "a broker already answers on 127.0.0.1:$AMQP_PORT"
        return 0
    fi
    install_if_missing
    write_config
    log "starting a private node in $DIR"
    ulimit -n 20000 2>/dev/null || true
    setsid "$BIN/rabbitmq-server" > "$DIR/log/stdout.log" 2>&1 < /dev/null &
    # The pid file appears once the node has started writing it; then wait for boot.
    for _ in $(seq 1 100); do [ -s "$RABBITMQ_PID_FILE" ] && break; sleep 0.2; done
    if ! "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" wait "$RABBITMQ_PID_FILE" --timeout 90 >/dev/null 2>&1; then
        log "the node did not boot; last log lines:"
        tail -n 30 "$DIR/log/stdout.log" >&2 || true
        exit 1
    fi
    for _ in $(seq 1 100); do answers && break; sleep 0.2; done
    answers || { log "the node booted but AMQP does not answer on $AMQP_PORT"; exit 1; }
    log "ready on amqp://127.0.0.1:$AMQP_PORT"
}

stop() {
    if [ -s "$RABBITMQ_PID_FILE" ]; then
        "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" stop "$RABBITMQ_PID_FILE" >/dev/null 2>&1 || true
    fi
    rm -f "$RABBITMQ_PID_FILE"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    status) answers ;;
    ctl) shift; exec "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" "$@" ;;
    *) echo "usage: $0 start|stop|restart|status|ctl ARGS" >&2; exit 2 ;;
esac
