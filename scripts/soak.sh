#!/usr/bin/env bash
# The long forms of the soak tests (README "Guarantees"). Progress: tail -f /tmp/warren-soak.log
#
#   scripts/soak.sh [messages, default 115000] [fault rounds, default 3]
#     Numbered messages from WebSocket, HTTP and AMQP publishers to quorum inboxes on two
#     Warren nodes, while the test SIGKILLs nodes, closes every broker connection, stops and
#     starts RabbitMQ and cuts client sockets mid-frame, each fault type once per round.
#   scripts/soak.sh cluster [messages, default 100000] [rounds, default 2]
#     A local 3-node RabbitMQ cluster (scripts/rabbitmq.sh cluster), two Warren nodes given
#     all three brokers, the same publishers; each round SIGKILLs every broker node in turn
#     (the kills spread over the messages) and restarts it; both nodes write one PostgreSQL
#     store (scripts/postgres.sh), and every acknowledged message must be in it.
#
# Each prints its figures (sent, acked, delivered, lost, …) and fails on any loss.
# The default suite (scripts/test.sh) runs the short forms.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/rabbitmq.sh start
rm -f /tmp/warren-soak.log
if [[ "${1:-}" == "cluster" ]]; then
  scripts/postgres.sh start
  trap 'scripts/rabbitmq.sh cluster stop >/dev/null 2>&1 || true' EXIT
  WARREN_CLUSTER_SOAK_MESSAGES="${2:-100000}" WARREN_CLUSTER_SOAK_ROUNDS="${3:-2}" \
    swift test --no-parallel --filter ClusterSoakTests 2>&1 | grep -E "^(cluster soak|✘|✔ Test)"
else
  WARREN_SOAK_MESSAGES="${1:-115000}" WARREN_SOAK_FAULT_ROUNDS="${2:-3}" \
    swift test --no-parallel --filter 'WarrenIntegrationTests\.SoakTests' 2>&1 | grep -E "^(soak|✘|✔ Test)"
fi
