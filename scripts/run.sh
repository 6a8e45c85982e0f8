#!/usr/bin/env bash
# Runs Warren on the shipped bridge.toml, bringing up a local RabbitMQ first when
# none answers. Builds in release mode (without the runtime exclusivity checks, as every
# release build of Warren: README, "Release builds"); stop with Ctrl-C (SIGINT) or SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/rabbitmq.sh start
swift build -c release --product warren -Xswiftc -enforce-exclusivity=unchecked
exec .build/release/warren serve --config "${WARREN_CONFIG:-bridge.toml}" "$@"
