#!/usr/bin/env bash
# Status reads' CPU under wrk, end to end: starts the runnable jar (build it first: mvn -B -DskipTests package) as
# intake-cpu.sh does, creates orders over 100 SKUs for 3 s, then reads them (GET /v1/orders/{id}, an order at random
# each time, answered from the status cache as a buyer's polling page is): 20 s of warm-up, then cpu-split.sh for
# 20 s, and prints the service's JVM CPU per read. wrk is a closed loop (64 connections): the rate is what the
# machine gives with wrk on it, and its latencies hide stalls. Usage, from the repository root:
# bash load-tests/reads-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source load-tests/node.sh

OT_CLIENTS_OVERRIDES=$UNCAPPED_DEV_USER start_node reads-cpu
stock_skus 100
WRK_SKUS=100 wrk -t2 -c16 -d3s -s load-tests/wrk/create-order.lua http://127.0.0.1:8080/v1/orders > /dev/null
export WRK_IDS=target/reads-cpu-ids.txt
node_sql -t -A -c "SELECT id FROM orders" > "$WRK_IDS"
echo "reads-cpu: reading $(wc -l < "$WRK_IDS") orders"

wrk -t2 -c64 -d20s -s load-tests/wrk/read-order.lua http://127.0.0.1:8080 > /dev/null
WRK_SCRIPT=load-tests/wrk/read-order.lua WRK_URL=http://127.0.0.1:8080 bash load-tests/cpu-split.sh "$node" 1000 20 \
  | tee target/reads-cpu.out
awk '/Requests\/sec/ { rate = $2 }
     /^cpu-split:/ { for (i = 1; i <= NF; i++) if ($i == "JVM") jvm = $(i + 1) }
     END { printf "reads-cpu: the service'\''s JVM %.1f µs of CPU a read\n", jvm / rate * 1e6 }' target/reads-cpu.out
