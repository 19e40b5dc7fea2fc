#!/usr/bin/env bash
# Starts three nodes of the cluster profile on this machine (HTTP 8081, 8082, 8083), each in the
# background with its log and pid under data/cluster/; `bash conf/cluster.sh stop` stops them (SIGTERM:
# each drains and hands its shards over). Needs the local stack running and the jar built.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p data/cluster
if [[ "${1:-start}" == stop ]]; then
  for pidfile in data/cluster/node-*.pid; do
    [[ -f "$pidfile" ]] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
  exit 0
fi
[[ -f target/order-timeout.jar ]] || mvn -B -q package -DskipTests
for node in 1 2 3; do
  OT_NODE_ID=$node OT_HTTP_PORT=$((8080 + node)) \
    nohup java -jar target/order-timeout.jar conf/cluster.yaml > "data/cluster/node-$node.log" 2>&1 &
  echo $! > "data/cluster/node-$node.pid"
  echo "node $node: http://127.0.0.1:$((8080 + node)) (pid $!, log data/cluster/node-$node.log)"
done
