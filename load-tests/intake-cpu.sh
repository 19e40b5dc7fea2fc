#!/usr/bin/env bash
# Intake's CPU per create under wrk, end to end: starts the runnable jar (build it first: mvn -B -DskipTests package)
# on port 8080 with an embedded PostgreSQL of its own under target/ (fsync off, as the benchmarks; dev-user without a
# create rate limit or reachable caps), stocks SKU-0..SKU-999, warms up with 20 s of wrk, then runs cpu-split.sh for
# 20 s and stops the node. With --statements it also counts pg_stat_statements over the measured 20 s and prints
# PostgreSQL's statement time, planning and WAL per create and the statements that took most (the counting itself
# costs a quarter of the rate or so). Usage, from the repository root: bash load-tests/intake-cpu.sh [--statements]
set -euo pipefail
cd "$(dirname "$0")/.."
source load-tests/node.sh
statements=${1:-}

OT_CLIENTS_OVERRIDES=$UNCAPPED_DEV_USER start_node intake-cpu
stock_skus 1000
WRK_SKUS=1000 wrk -t2 -c64 -d20s -s load-tests/wrk/create-order.lua http://127.0.0.1:8080/v1/orders > /dev/null

if [ "$statements" = --statements ]; then
  node_sql -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
    -c "ALTER SYSTEM SET pg_stat_statements.track = 'all'" \
    -c "ALTER SYSTEM SET pg_stat_statements.track_planning = on" -c "SELECT pg_reload_conf()" \
    -c "SELECT pg_stat_statements_reset()" > /dev/null
fi
before=$(node_sql -t -A -c "SELECT count(*) FROM orders")
bash load-tests/cpu-split.sh "$node" 1000 20
created=$(( $(node_sql -t -A -c "SELECT count(*) FROM orders") - before ))
echo "intake-cpu: $created orders created in the measured 20 s"
if [ "$statements" = --statements ]; then
  node_sql -c "SELECT round(sum(total_exec_time)::numeric / $created, 3) AS exec_ms_per_create,
                 round(sum(total_plan_time)::numeric / $created, 3) AS plan_ms_per_create,
                 round(sum(wal_bytes) / $created) AS wal_bytes_per_create
          FROM pg_stat_statements WHERE toplevel"
  node_sql -c "SELECT round(total_exec_time) AS exec_ms, round(total_plan_time) AS plan_ms, calls,
                 round((total_exec_time / greatest(calls, 1))::numeric, 2) AS ms_a_call,
                 round((total_plan_time / greatest(plans, 1))::numeric, 2) AS plan_ms_a_call,
                 left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS statement
          FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 10"
fi
