# Sourced by the load-tests scripts, from the repository root: a node of their own from the runnable jar, and CPU ticks.

# start_node NAME: starts target/order-timeout.jar on port 8080 with an embedded PostgreSQL of its own in
# target/NAME-db (fsync off), its log in target/NAME.log, the caller's OT_* variables passed on; sets node (its pid) and
# data, stops it and removes the data when the script exits, and returns once it is ready.
start_node() {
  data=target/$1-db
  rm -rf "$data"
  OT_LOG_LEVEL=WARN OT_DATABASE_EMBEDDED_FSYNC=false OT_DATABASE_DATA_DIR="$data" OT_HTTP_PORT=8080 \
    java -jar target/order-timeout.jar > "target/$1.log" 2>&1 &
  node=$!
  trap stop_node EXIT
  for _ in $(seq 1 120); do
    curl -s -o /dev/null -f localhost:8080/health/ready && break
    sleep 1
  done
}

stop_node() {
  kill "$node" 2> /dev/null || true
  while kill -0 "$node" 2> /dev/null; do sleep 1; done
  rm -rf "$data"
}

# The embedded PostgreSQL's postmaster.pid of the node started by start_node.
postmaster_pid_file() {
  find "$data" -name postmaster.pid | head -1
}

# For OT_CLIENTS_OVERRIDES: dev-user without a create rate limit or caps it could reach (the service is measured, not
# its limits).
UNCAPPED_DEV_USER='{dev-user: {createsPerSecond: 0, maxUnpaidOrders: 1000000000, maxReservedUnits: 1000000000000}}'

# node_sql ARGS...: psql on the embedded PostgreSQL of the node started by start_node.
node_sql() {
  psql -h 127.0.0.1 -p "$(sed -n 4p "$(postmaster_pid_file)")" -U postgres -d postgres -X -q "$@"
}

# stock_skus COUNT: SKU-0..SKU-(COUNT-1) with 100,000,000 units each, on the node started by start_node.
stock_skus() {
  local k
  for k in $(seq 0 $(($1 - 1))); do
    curl -s -o /dev/null -X PUT "localhost:8080/v1/admin/inventory/SKU-$k" -H 'Authorization: Bearer dev-admin-key' \
      -H 'Content-Type: application/json' -d '{"available":100000000}'
  done
}

# ticks PID...: utime + stime of the given pids, in clock ticks.
ticks() {
  local total=0 pid
  for pid in "$@"; do
    if [ -r "/proc/$pid/stat" ]; then total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); fi
  done
  echo "$total"
}

# jit_ticks PID: utime + stime of a JVM's JIT compiler threads (HotSpot's "C1 CompilerThread<n>", "C2 ..."), in ticks.
jit_ticks() {
  local total=0 task
  for task in /proc/"$1"/task/*; do
    case "$(cat "$task/comm" 2> /dev/null)" in
      "C1 CompilerThre"*|"C2 CompilerThre"*)
        total=$((total + $(awk '{print $14 + $15}' "$task/stat" 2> /dev/null || echo 0)));;
    esac
  done
  echo "$total"
}
