#!/usr/bin/env bash
# Runs Warren's whole test suite: unit tests, and broker- and database-backed tests against a
# local RabbitMQ and PostgreSQL, which this script installs and starts first when none answers.
# Extra arguments go to `swift test` (e.g. --filter AMQPClientTests); without any, the
# libFuzzer targets also run for a bounded time at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/rabbitmq.sh start
# The conversation store's PostgreSQL backend is tested against a private cluster.
scripts/postgres.sh start
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
apt_install() { $sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null; }
# The metrics test checks /metrics with a real Prometheus parser: Debian's python3-prometheus-client
# for the system's Python (a stock Debian refuses `pip install` into it).
export WARREN_TEST_PYTHON=/usr/bin/python3
"$WARREN_TEST_PYTHON" -c "import prometheus_client" 2>/dev/null || apt_install python3-prometheus-client
# The JavaScript client's tests run in Node 20 or later (its WebSocket) and in headless Chromium;
# without such a Node they are skipped, and said to be.
node_major() { node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
[ "$(node_major)" -ge 20 ] 2>/dev/null || command -v node >/dev/null || apt_install nodejs npm || true
if [ "$(node_major)" -ge 20 ] 2>/dev/null && command -v npm >/dev/null; then
    export WARREN_TEST_NODE=1
else
    export WARREN_TEST_NODE=0
    echo "test.sh: the JavaScript client's tests are SKIPPED: they need Node.js 20 or later and npm (found: $(node --version 2>/dev/null || echo none))"
fi
command -v chromium >/dev/null || apt_install chromium
log=$(mktemp)
# The broker's queues and exchanges before the suite: what the suite's nodes leave (durable
# exchanges, inbox and bot queues) is deleted at the end (scripts/broker_names.py).
names=$(mktemp)
scripts/broker_names.py list > "$names" || rm -f "$names"
# The cluster-failover soak starts a 3-node RabbitMQ cluster (scripts/rabbitmq.sh cluster) and
# stops it at its end; stopped here too in case a failure left it running.
trap 'rm -f "$log"; scripts/rabbitmq.sh cluster stop >/dev/null 2>&1 || true
      [ -f "$names" ] && { scripts/broker_names.py tidy "$names" || true; rm -f "$names"; }' EXIT
# Serial: some integration tests close every broker connection on purpose.
status=0
swift test --no-parallel "$@" 2>&1 | tee "$log" || status=$?
# The Swift client is a package of its own, with its own tests (no server needed).
if [ "$#" -eq 0 ]; then
    (cd clients/swift && swift test 2>&1) | tee -a "$log" | grep -E "^(✔|✘) Test run|error:" || status=1
fi
# One plain summary line from Swift Testing's own closing line.
total=$(grep -oE 'Test run with [0-9]+ tests?' "$log" | grep -oE '[0-9]+' | awk '{ s += $1 } END { if (NR) print s }' || true)
failed=$(grep -E '^✘ Test .* failed after' "$log" | grep -vc '^✘ Test run with' || true)
if [ -n "$total" ]; then
    echo "tests: $((total - failed)) passed, $failed failed"
fi
# The whole suite (no arguments) also runs each libFuzzer target briefly: the envelope,
# WebSocket op, topic pattern and AMQP frame decoders (scripts/fuzz.sh; longer runs by hand).
if [ "$#" -eq 0 ]; then
    if scripts/fuzz.sh all "${WARREN_FUZZ_SECONDS:-15}"; then
        echo "fuzz: 4 targets, ${WARREN_FUZZ_SECONDS:-15}s each, no finding"
    else
        echo "fuzz: FINDING (see above)"
        status=1
    fi
fi
exit "$status"
