#!/usr/bin/env bash
# What a node costs with nothing to do: starts the runnable jar (build it first: mvn -B -DskipTests package) on port
# 8080 with an embedded PostgreSQL of its own under target/, lets it settle for 20 s, then counts the CPU of its JVM
# and of every PostgreSQL process over SECONDS (60) from /proc tick counts, and stops the node. No request is sent:
# what it prints is the periodic work alone (timer tick, sweep, dispatcher, gauges, leases).
# Usage, from the repository root: bash load-tests/idle-cpu.sh [SECONDS=60]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
data=target/idle-cpu-db
rm -rf "$data"

OT_LOG_LEVEL=WARN OT_DATABASE_EMBEDDED_FSYNC=false OT_DATABASE_DATA_DIR="$data" OT_HTTP_PORT=8080 \
  java -jar target/order-timeout.jar > target/idle-cpu.log 2>&1 &
node=$!
stop() {
  kill "$node" 2> /dev/null || true
  while kill -0 "$node" 2> /dev/null; do sleep 1; done
  rm -rf "$data"
}
trap stop EXIT
for _ in $(seq 1 120); do
  curl -s -o /dev/null -f localhost:8080/health/ready && break
  sleep 1
done
sleep 20
hz=$(getconf CLK_TCK)
ticks() { # utime + stime of the given pids, in clock ticks
  local total=0 pid
  for pid in "$@"; do
    if [ -r "/proc/$pid/stat" ]; then total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); fi
  done
  echo "$total"
}
postmaster=$(head -1 "$(find "$data" -name postmaster.pid | head -1)")
postgres="$postmaster $(pgrep -P "$postmaster" | tr '\n' ' ')"
pg0=$(ticks $postgres); jvm0=$(ticks "$node")
sleep "$seconds"
postgres="$postmaster $(pgrep -P "$postmaster" | tr '\n' ' ')"
pg1=$(ticks $postgres); jvm1=$(ticks "$node")
awk -v j=$((jvm1 - jvm0)) -v p=$((pg1 - pg0)) -v s="$seconds" -v hz="$hz" \
  'BEGIN { printf "idle-cpu: over %d s with no request, JVM %.3f cores, PostgreSQL %.3f cores\n", s, j / hz / s, p / hz / s }'
