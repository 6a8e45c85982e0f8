#!/usr/bin/env bash
# Runs Warren on the shipped bridge.toml, bringing up a local RabbitMQ first when
# none answers. Builds in release mode; stop with Ctrl-C (SIGINT) or SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/rabbitmq.sh start
swift build -c release --product warren
exec .build/release/warren serve --config "${WARREN_CONFIG:-bridge.toml}" "$@"
