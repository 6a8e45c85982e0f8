#!/usr/bin/env bash
# The long form of the soak test (README "Guarantees"): numbered messages from WebSocket,
# HTTP and AMQP publishers to quorum inboxes on two Warren nodes, while the test SIGKILLs
# nodes, closes every broker connection, stops and starts RabbitMQ and cuts client sockets
# mid-frame, each fault type once per round. Prints
#   soak: sent S, acked A (× 2 inboxes), delivered D, duplicates X, lost L, order violations V
# and fails on any loss. Progress: tail -f /tmp/warren-soak.log
#   scripts/soak.sh [messages, default 115000] [fault rounds, default 3]
# The default suite (scripts/test.sh) runs the short form: 4,000 messages, one round.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/rabbitmq.sh start
rm -f /tmp/warren-soak.log
WARREN_SOAK_MESSAGES="${1:-115000}" WARREN_SOAK_FAULT_ROUNDS="${2:-3}" \
  swift test --no-parallel --filter SoakTests 2>&1 | grep -E "^(soak|✘|✔ Test)" 
