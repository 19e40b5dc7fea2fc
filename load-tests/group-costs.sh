#!/usr/bin/env bash
# What one call of each group statement costs PostgreSQL with nothing else running: create_orders, pay_orders and
# close_due_orders at several group sizes (the creates' orders of 2 items, the pays' and closes' wrk's unpaid orders
# of 1-3). Starts the runnable jar (build it first: mvn -B -DskipTests package) on port 8080 with an embedded
# PostgreSQL of its own under target/ (fsync off), stocks SKU-0..SKU-999 and creates orders with 10 s of wrk, then
# calls each function CALLS times per size (after 10 calls not counted), each call in a subtransaction rolled back, so
# every call finds the same rows. Prints the time a call and an order, and the statements inside (the function's one
# statement, its triggers) from pg_stat_statements. A call's time is PostgreSQL's work alone: no round trip, no
# commit, no other session. A close's orders are made due in its subtransaction first, not counted, but that UPDATE
# fires the status trigger too: its line there shows twice the calls, its time the mean of both. Nothing is
# committed, so a pay's or close's stripe rows (inventory_paid, inventory_released) are always inserted, where in a
# running service they are mostly updated.
# With `parts` after CALLS it measures instead what each part of a create costs: create_orders at 32 orders a call
# whole, then without one part at a time (its event, its log line, its event's queue, the holdings triggers, each
# index of orders and order_items but the keys), each taken out in a transaction rolled back after its calls, and the
# whole again after them; a part's cost is the difference. Three rounds: the machine's noise is a few µs an order.
# Usage, from the repository root: bash load-tests/group-costs.sh [CALLS] [parts]
set -euo pipefail
cd "$(dirname "$0")/.."
source load-tests/node.sh
calls=${1:-200}
mode=${2:-}

OT_CLIENTS_OVERRIDES=$UNCAPPED_DEV_USER start_node group-costs
stock_skus 1000
WRK_SKUS=1000 wrk -t2 -c32 -d10s -s load-tests/wrk/create-order.lua http://127.0.0.1:8080/v1/orders > /dev/null
node_sql -c "ANALYZE" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" > /dev/null
echo "group-costs: $(node_sql -t -A -c "SELECT count(*) FROM orders WHERE status = 'UNPAID'") unpaid orders," \
  "$calls calls of each size, each rolled back"

# cost FUNCTION ORDERS SETUP CALL: SETUP (PL/pgSQL, not timed) sets ids (and what CALL needs), CALL is timed.
cost() {
  node_sql -q -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = notice;
SET pg_stat_statements.track = 'all';
SELECT pg_stat_statements_reset() \gset
DO \$\$
DECLARE ids bigint[]; item_ids bigint[]; skus text[]; t0 timestamptz; total interval := '0'; i int;
BEGIN
  FOR i IN 1..$calls + 10 LOOP
    BEGIN
      IF i = 11 THEN PERFORM pg_stat_statements_reset(); END IF;
      $3
      t0 := clock_timestamp();
      $4
      IF i > 10 THEN total := total + (clock_timestamp() - t0); END IF;
      RAISE EXCEPTION 'undo';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END LOOP;
  RAISE NOTICE '%', format('%s, %s order(s) a call: %s ms a call, %s µs an order', '$1', $2,
    round(extract(epoch FROM total)::numeric * 1000 / $calls, 3),
    round(extract(epoch FROM total)::numeric * 1000000 / $calls / $2));
END \$\$;
SELECT calls, round(mean_exec_time::numeric, 3) AS ms_a_call, left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS inside
FROM pg_stat_statements WHERE calls >= $calls AND query !~ 'random\(\)|order_id_at|pg_stat_statements_reset'
  AND query !~* '^(SELECT count\(\*\) FROM|UPDATE orders SET close_at)' ORDER BY total_exec_time DESC LIMIT 6;
SQL
}

create_setup() {
  echo "ids := (SELECT array_agg(order_id_at(clock_timestamp()) + 1000 + k) FROM generate_series(1, $1) k);
      SELECT array_agg(ids[1 + k / 2]), array_agg('SKU-' || ((r + k) % 1000)) INTO item_ids, skus
      FROM generate_series(0, 2 * $1 - 1) k, (SELECT (random() * 999)::int AS r) x;"
}
create_call() {
  echo "PERFORM count(*) FROM create_orders(ids, array_fill(0, ARRAY[$1]), array_fill('dev-user'::text, ARRAY[$1]),
      (SELECT array_agg('u-' || k) FROM generate_series(1, $1) k), array_fill('physical'::text, ARRAY[$1]),
      array_fill(1800, ARRAY[$1]), array_fill(1500, ARRAY[$1]), item_ids, skus, array_fill(1, ARRAY[2 * $1]));"
}

if [ "$mode" = parts ]; then
  create_orders="'create_orders(bigint[], int[], text[], text[], text[], int[], int[], bigint[], text[], int[])'"
  # cut FROM TO: create_orders' body without the text from FROM up to TO (both E'' literals); fails if either is gone.
  cut() {
    echo "DO \$\$ DECLARE def text := pg_get_functiondef($create_orders::regprocedure);
      from_at int := strpos(def, $1); to_at int := strpos(def, $2);
    BEGIN
      IF from_at = 0 OR to_at <= from_at THEN RAISE EXCEPTION 'create_orders has changed: part not found'; END IF;
      EXECUTE left(def, from_at - 1) || substr(def, to_at);
    END \$\$;"
  }
  # part LABEL DDL: create_orders at 32 orders a call with DDL applied first, all rolled back after.
  part() {
    node_sql -q -v ON_ERROR_STOP=1 <<SQL 2>&1 | sed -n -e 's/^NOTICE:  //p' -e '/ERROR/p'
SET client_min_messages = notice;
BEGIN;
SET LOCAL lock_timeout = '10s';
$2
DO \$\$
DECLARE ids bigint[]; item_ids bigint[]; skus text[]; t0 timestamptz; total interval := '0'; i int;
BEGIN
  FOR i IN 1..$calls + 10 LOOP
    BEGIN
      $(create_setup 32)
      t0 := clock_timestamp();
      $(create_call 32)
      IF i > 10 THEN total := total + (clock_timestamp() - t0); END IF;
      RAISE EXCEPTION 'undo';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END LOOP;
  RAISE NOTICE '%', format('%-46s %s µs an order', '$1',
    round(extract(epoch FROM total)::numeric * 1000000 / $calls / 32));
END \$\$;
ROLLBACK;
SQL
  }
  indexes=$(node_sql -t -A -c "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_class t ON t.oid = x.indrelid WHERE t.relname IN ('orders', 'order_items') AND NOT x.indisprimary
    ORDER BY t.relname, i.relname")
  for round in 1 2 3; do
    echo "group-costs parts, round $round: create_orders, 32 orders of 2 items a call"
    part "whole" ""
    part "without its event (and its queue row)" "$(cut "E',\n  evented AS ('" "E'\n  SELECT c.id, c.created_at'")"
    part "without its log line" "$(cut "E'\n  logged AS ('" "E'\n  evented AS ('")"
    part "without the trigger that queues its event" "DROP TRIGGER outbox_pending_added ON outbox;"
    part "without the holdings triggers" \
      "DROP TRIGGER orders_created ON orders; DROP TRIGGER order_items_created ON order_items;"
    for index in $indexes; do part "without index $index" "DROP INDEX $index;"; done
    part "whole" ""
  done
  exit 0
fi

unpaid="SELECT array_agg(id) INTO ids FROM (SELECT id FROM orders WHERE status = 'UNPAID' ORDER BY random() LIMIT"
for n in 1 8 32; do
  cost create_orders "$n" "$(create_setup "$n")" "$(create_call "$n")"
done
for n in 1 6 30; do
  cost pay_orders "$n" "$unpaid $n) x;" "PERFORM count(*) FROM pay_orders(ids, array_fill(NULL::text, ARRAY[$n]));"
done
for n in 1 6 30; do
  cost close_due_orders "$n" "$unpaid $n) x;
      UPDATE orders SET close_at = now() - interval '1 second' WHERE id = ANY(ids);" \
    "PERFORM count(*) FROM close_due_orders(ids, 'TIMEOUT');"
done
