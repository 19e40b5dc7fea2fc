#!/usr/bin/env bash
# What a node costs with nothing to do: starts the runnable jar (build it first: mvn -B -DskipTests package) on port
# 8080 with an embedded PostgreSQL of its own under target/, lets it settle for 20 s, then counts the CPU of its JVM
# and of every PostgreSQL process over SECONDS (60) from /proc tick counts, and stops the node. No request is sent:
# what it prints is the periodic work alone (timer tick, sweep, dispatcher, gauges, leases).
# Usage, from the repository root: bash load-tests/idle-cpu.sh [SECONDS=60]
set -euo pipefail
cd "$(dirname "$0")/.."
source load-tests/node.sh
seconds=${1:-60}

start_node idle-cpu
sleep 20
hz=$(getconf CLK_TCK)
postmaster=$(head -1 "$(postmaster_pid_file)")
postgres="$postmaster $(pgrep -P "$postmaster" | tr '\n' ' ')"
pg0=$(ticks $postgres); jvm0=$(ticks "$node")
sleep "$seconds"
postgres="$postmaster $(pgrep -P "$postmaster" | tr '\n' ' ')"
pg1=$(ticks $postgres); jvm1=$(ticks "$node")
awk -v j=$((jvm1 - jvm0)) -v p=$((pg1 - pg0)) -v s="$seconds" -v hz="$hz" \
  'BEGIN { printf "idle-cpu: over %d s with no request, JVM %.3f cores, PostgreSQL %.3f cores\n", s, j / hz / s, p / hz / s }'
