#!/usr/bin/env bash
# Checks the demo page as a person would: headless Chromium (Debian's chromium
# package, installed if missing), two tabs chatting through a local Warren.
# Bounded: everything it starts it stops again, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
# The driver needs Python's websockets: Debian's python3-websockets (for /usr/bin/python3) if
# the python3 on the PATH has none.
py=python3
$py -c "import websockets" 2>/dev/null || py=/usr/bin/python3
$py -c "import websockets" 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-websockets; }
scripts/rabbitmq.sh start
swift build --product warren
port=${WARREN_DEMO_PORT:-8089}
WARREN_HTTP_LISTEN="127.0.0.1:$port" .build/debug/warren serve --config bridge.toml > /tmp/warren-demo.log 2>&1 &
warren_pid=$!
chromium --headless=new --no-sandbox --disable-gpu --remote-debugging-address=127.0.0.1 --remote-debugging-port=9222 \
    --window-size=1100,700 about:blank > /tmp/chromium-demo.log 2>&1 &
chromium_pid=$!
trap 'kill $warren_pid $chromium_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && curl -sf http://127.0.0.1:9222/json/version >/dev/null && break
    sleep 0.2
done
timeout 120 "$py" scripts/demo-check.py "http://127.0.0.1:$port" "${1:-/tmp}"
