#!/usr/bin/env bash
# A private local RabbitMQ for Warren's development, tests and demo.
#
#   scripts/rabbitmq.sh start     install rabbitmq-server if missing, start a node if none answers, wait for AMQP
#   scripts/rabbitmq.sh stop      stop the node this script started
#   scripts/rabbitmq.sh restart   stop, then start (same data: durable queues survive)
#   scripts/rabbitmq.sh ctl ARGS  run rabbitmqctl against the node (e.g. ctl close_all_connections bye)
#   scripts/rabbitmq.sh status    exit 0 if the broker answers on AMQP
#
#   scripts/rabbitmq.sh cluster start      a 3-node cluster (rabbit1..3@localhost, AMQP on 5701..5703);
#                                          from fresh data when none of its nodes is running
#   scripts/rabbitmq.sh cluster stop       stop its nodes
#   scripts/rabbitmq.sh cluster kill N     kill -9 node N (1..3)
#   scripts/rabbitmq.sh cluster restart N  start node N again (it rejoins the cluster)
#   scripts/rabbitmq.sh cluster settle N   wait (up to 120 s) until losing node N leaves every quorum queue
#                                          its quorum: a node restarted a moment ago answers AMQP before
#                                          its queue members have caught up
#   scripts/rabbitmq.sh cluster urls       the nodes' AMQP URLs, comma-separated (for WARREN_AMQP_URL)
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

# Starts rabbitmq-server in the background (the RABBITMQ_* environment says which node) and
# waits for it to boot and answer on AMQP.
boot() {
    setsid "$BIN/rabbitmq-server" > "$RABBITMQ_LOG_BASE/stdout.log" 2>&1 < /dev/null &
    # The pid file appears once the node has started writing it; then wait for boot.
    for _ in $(seq 1 100); do [ -s "$RABBITMQ_PID_FILE" ] && break; sleep 0.2; done
    if ! "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" wait "$RABBITMQ_PID_FILE" --timeout 120 >/dev/null 2>&1; then
        log "$1 did not boot; last log lines:"
        tail -n 30 "$RABBITMQ_LOG_BASE/stdout.log" >&2 || true
        exit 1
    fi
    for _ in $(seq 1 100); do answers && break; sleep 0.2; done
    answers || { log "$1 booted but AMQP does not answer on $AMQP_PORT"; exit 1; }
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
    boot "the node"
    log "ready on amqp://127.0.0.1:$AMQP_PORT"
}

stop() {
    if [ -s "$RABBITMQ_PID_FILE" ]; then
        "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" stop "$RABBITMQ_PID_FILE" >/dev/null 2>&1 || true
    fi
    rm -f "$RABBITMQ_PID_FILE"
}

# --- a local 3-node cluster ---------------------------------------------------------------
# Each node has its own name, ports and data directory under $CLUSTER_DIR, the same Erlang
# cookie, no plugins and no TLS; node N listens for AMQP on 127.0.0.1:$((CLUSTER_PORT + N)).
CLUSTER_DIR="${WARREN_RABBITMQ_CLUSTER_DIR:-/tmp/warren-rabbitmq-cluster}"
CLUSTER_PORT="${WARREN_RABBITMQ_CLUSTER_PORT:-5700}"

node_env() {
    local n="$1" d="$CLUSTER_DIR/n$1"
    export HOME="$d/home"
    export RABBITMQ_NODENAME="rabbit$n@localhost"
    export RABBITMQ_NODE_PORT=$((CLUSTER_PORT + n))
    export RABBITMQ_DIST_PORT=$((CLUSTER_PORT + 20000 + n))
    export RABBITMQ_MNESIA_BASE="$d/mnesia"
    export RABBITMQ_LOG_BASE="$d/log"
    export RABBITMQ_CONFIG_FILE="$d/rabbitmq.conf"
    export RABBITMQ_ADVANCED_CONFIG_FILE="$d/advanced.config"
    export RABBITMQ_CONF_ENV_FILE="$d/rabbitmq-env.conf"
    export RABBITMQ_ENABLED_PLUGINS_FILE="$d/enabled_plugins"
    export RABBITMQ_PID_FILE="$d/rabbit.pid"
    export RABBITMQ_LOGS="$d/log/rabbit.log"
    AMQP_PORT=$RABBITMQ_NODE_PORT
}

node_config() {
    local d="$CLUSTER_DIR/n$1"
    mkdir -p "$HOME" "$RABBITMQ_MNESIA_BASE" "$RABBITMQ_LOG_BASE"
    [ -s "$CLUSTER_DIR/cookie" ] || { head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' > "$CLUSTER_DIR/cookie"; }
    install -m 400 "$CLUSTER_DIR/cookie" "$HOME/.erlang.cookie"
    : > "$RABBITMQ_CONF_ENV_FILE"
    echo "[]." > "$RABBITMQ_ENABLED_PLUGINS_FILE"
    cat > "$RABBITMQ_CONFIG_FILE" <<CONF
listeners.tcp.default = 127.0.0.1:$RABBITMQ_NODE_PORT
loopback_users = none
log.console = false
log.file.level = warning
CONF
    echo "[{kernel, [{inet_dist_use_interface, {127,0,0,1}}]}]." > "$RABBITMQ_ADVANCED_CONFIG_FILE"
}

node_start() {
    node_env "$1"
    if answers; then log "node $1 already answers on 127.0.0.1:$AMQP_PORT"; return 0; fi
    node_config "$1"
    ulimit -n 20000 2>/dev/null || true
    rm -f "$RABBITMQ_PID_FILE"
    boot "node $1"
}

cluster() {
    local cmd="${1:-start}"
    mkdir -p "$CLUSTER_DIR"
    case "$cmd" in
        start)
            install_if_missing
            # A cluster started from nothing starts from a clean state: a clustered node
            # restarted from old data waits for the peers it last saw, and started one after
            # another they would wait for each other. (`cluster restart N` keeps node N's data:
            # it rejoins peers that are running.)
            local running=0
            for n in 1 2 3; do node_env "$n"; answers && running=1; done
            if [ "$running" = 0 ]; then
                for n in 1 2 3; do rm -rf "$CLUSTER_DIR/n$n/mnesia"; done
            fi
            for n in 1 2 3; do node_start "$n"; done
            for n in 2 3; do
                node_env "$n"
                if ! "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" cluster_status 2>/dev/null | grep -q "rabbit1@localhost"; then
                    "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" stop_app >/dev/null
                    "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" join_cluster rabbit1@localhost >/dev/null
                    "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" start_app >/dev/null
                fi
            done
            log "cluster ready: $(cluster urls)"
            ;;
        stop)
            for n in 3 2 1; do
                node_env "$n"
                [ -s "$RABBITMQ_PID_FILE" ] && "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" stop "$RABBITMQ_PID_FILE" >/dev/null 2>&1 || true
                rm -f "$RABBITMQ_PID_FILE"
            done
            ;;
        kill)
            node_env "${2:?node number}"
            [ -s "$RABBITMQ_PID_FILE" ] && kill -9 "$(cat "$RABBITMQ_PID_FILE")" 2>/dev/null || true
            rm -f "$RABBITMQ_PID_FILE"
            ;;
        restart) node_start "${2:?node number}" ;;
        settle)
            node_env "${2:?node number}"
            local until=$((SECONDS + 120))
            until "$BIN/rabbitmq-queues" -n "$RABBITMQ_NODENAME" check_if_node_is_quorum_critical >/dev/null 2>&1; do
                if [ "$SECONDS" -ge "$until" ]; then log "node $2 is still quorum-critical after 120 s"; return 1; fi
                sleep 1
            done
            ;;
        urls) echo "amqp://guest:guest@127.0.0.1:$((CLUSTER_PORT + 1))/%2f,amqp://guest:guest@127.0.0.1:$((CLUSTER_PORT + 2))/%2f,amqp://guest:guest@127.0.0.1:$((CLUSTER_PORT + 3))/%2f" ;;
        *) echo "usage: $0 cluster start|stop|kill N|restart N|settle N|urls" >&2; exit 2 ;;
    esac
}

case "${1:-start}" in
    cluster) shift; cluster "$@" ;;
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    status) answers ;;
    ctl) shift; exec "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" "$@" ;;
    *) echo "usage: $0 start|stop|restart|status|ctl ARGS" >&2; exit 2 ;;
esac
