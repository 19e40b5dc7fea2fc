#!/usr/bin/env bash
# Where the CPU goes while wrk creates orders against a service already running on port 8080 (for instance
# `java -jar target/order-timeout.jar` on the embedded default, with SKU-0..SKU-999 or SKU-FLASH stocked):
# the service's JVM (and its JIT compiler threads' share of it), every PostgreSQL process on the machine, wrk, and
# the whole machine, in cores, from /proc tick counts over the run.
# Usage: bash load-tests/cpu-split.sh SERVICE_PID [SKUS=1000] [SECONDS=20] (SKUS=1 is the flash sale). Run from the
# repository root; nothing else should be busy meanwhile. WRK_SCRIPT and WRK_URL send another load (reads-cpu.sh's).
set -euo pipefail
source "$(dirname "$0")/node.sh"
jvm=$1
skus=${2:-1000}
seconds=${3:-20}
hz=$(getconf CLK_TCK)
machine() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }

postgres=$(pgrep -x postgres | tr '\n' ' ')
pg0=$(ticks $postgres); jvm0=$(ticks "$jvm"); jit0=$(jit_ticks "$jvm"); all0=$(machine)
WRK_SKUS=$skus wrk -t2 -c64 -d"${seconds}s" -s "${WRK_SCRIPT:-load-tests/wrk/create-order.lua}" --latency \
  "${WRK_URL:-http://127.0.0.1:8080/v1/orders}" \
  > /tmp/cpu-split-wrk.$$ 2>&1 &
wrk_job=$!
sleep 1
wrk_pid=$(pgrep -x wrk -P "$wrk_job" || pgrep -nx wrk)
wrk0=$(ticks "$wrk_pid")
sleep $((seconds - 2))
wrk1=$(ticks "$wrk_pid")
wait "$wrk_job"
pg1=$(ticks $postgres); jvm1=$(ticks "$jvm"); jit1=$(jit_ticks "$jvm"); all1=$(machine)

grep -E 'Requests/sec| 99%' /tmp/cpu-split-wrk.$$
rm -f /tmp/cpu-split-wrk.$$
awk -v j=$((jvm1 - jvm0)) -v c=$((jit1 - jit0)) -v p=$((pg1 - pg0)) -v w=$((wrk1 - wrk0)) -v a=$((all1 - all0)) \
    -v s="$seconds" -v ws=$((seconds - 2)) -v hz="$hz" \
  'BEGIN { printf "cpu-split: JVM %.2f cores (JIT compilers %.2f), PostgreSQL %.2f, wrk %.2f (over its middle %d s), " \
                 "whole machine %.2f of the run\n",
           j / hz / s, (c > 0 ? c : 0) / hz / s, p / hz / s, w / hz / ws, ws, a / hz / s }'
