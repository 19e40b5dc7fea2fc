package ordertimeout.store;

/**
 * Every SQL statement of the service, named. Parameters are always bound ($n). A statement that finds its orders by
 * id writes their status check {@code status IS NOT DISTINCT FROM 'UNPAID'} (the same: status is never null), which
 * no index can serve and no partial index's predicate matches, so that the planner reads the primary key: with
 * {@code status = 'UNPAID'} it took an index led by the status, or a partial index of unpaid orders with the id in
 * third place, and walked all of it for each lookup ({@code PartitionPlansTest}). Statements that touch
 * several inventory rows lock them in SKU order first ({@link #LOCK_STOCK_OF_ORDERS}, {@link #LOCK_STOCK_BY_SKU}), and
 * pays and closes count their units on stripes in SKU order, so that concurrent transactions cannot deadlock on stock.
 */
final class Sql {
  private Sql() {}

  /**
   * One order ({@code $1}) with its items, if of client {@code $2} (null: any client); planned once per session (V13,
   * V28).
   */
  static final String SELECT_ORDER = "SELECT * FROM order_view($1, $2)";

  /** An order's columns as {@link OrderStore#toOrder} reads them, its items aside ({@code o}: the order's row). */
  private static final String ORDER_COLUMNS = "o.id, o.client, o.user_id, o.category, o.status, o.close_reason, "
      + "o.created_at, o.close_at, o.remind_at, o.paid_at, o.closed_at, o.hold_until";

  /**
   * An order's items in the order every statement lists them: by their SKUs' bytes, whatever the database's collation,
   * which is Java's String order for a SKU (ASCII), as a create sorts them ({@code i}: its order_items rows; V28).
   */
  private static final String ITEMS_BY_SKU = "ORDER BY i.sku COLLATE \"C\"";

  /** An order's items as {@link OrderStore#toOrder} reads them ({@code i}: its order_items rows). */
  private static final String ITEMS_AS_ARRAYS =
      "array_agg(i.sku %1$s) AS skus, array_agg(i.qty %1$s) AS qtys".formatted(ITEMS_BY_SKU);

  /** Orders by id ({@code $1}) of any client; the caller checks who may see them. */
  static final String SELECT_ORDERS = """
      SELECT %s, %s
      FROM orders o JOIN order_items i ON i.order_id = o.id
      WHERE o.id = ANY($1)
      GROUP BY o.id""".formatted(ORDER_COLUMNS, ITEMS_AS_ARRAYS);

  // ---- node-id leases (NodeLeases)

  /**
   * Sent first in every transaction that takes or renews a lease: they run one at a time, so that of two nodes taking
   * theirs at once the second sees the first (each needs to know whether it is alone, for its status cache).
   */
  static final String NODE_LEASES_IN_TURN = "SELECT pg_advisory_xact_lock(4410295837)";

  /** A node id never held before gets a free row, so that the take below can lock it. */
  static final String ADD_NODE_LEASE = """
      INSERT INTO node_leases (node_id, holder, expires_at, id_high_water_millis, renewed_at)
      VALUES ($1, '', 'epoch', -1, now()) ON CONFLICT (node_id) DO NOTHING""";

  /**
   * Locks the lease's row and judges the lease by the database clock once the take holds its turn and the row
   * ({@code clock_timestamp()}): {@code now()}, the transaction's start, is from before those waits, and would
   * overstate the time left by them. A lease found free so has ended: its holder stopped counting it earlier (from
   * before its renewal's start, a tenth short) and cannot renew it while the take holds its turn. Judged above the
   * locking subquery: a row lock waited for on a row left unchanged hands up what was computed before the wait.
   */
  static final String LOCK_NODE_LEASE = """
      SELECT holder, expires_at, id_high_water_millis, expires_at > clock_timestamp() AS live,
             greatest(0, (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint) AS expires_in_millis
      FROM (SELECT holder, expires_at, id_high_water_millis FROM node_leases WHERE node_id = $1 FOR UPDATE) lease""";

  /**
   * Takes the lease (its row locked by {@link #LOCK_NODE_LEASE} and found free) for holder {@code $2}, {@code $3} ms.
   * The new holder's ids start after the previous mark, so the new mark is past it by the lease too.
   */
  static final String TAKE_NODE_LEASE = holdNodeLease("greatest(id_high_water_millis + $3, $4)", "node_id = $1");

  /** Renews the lease of holder {@code $2} for {@code $3} ms; no row when another holder took it. */
  static final String RENEW_NODE_LEASE = holdNodeLease("greatest(id_high_water_millis, $4)", "node_id = $1 AND holder = $2");

  /**
   * The high-water mark only ever rises: to {@code highWater}, computed from the mark {@code $4} the node asks for.
   * {@code $5}: the fingerprint of the node's webhooks
   * ({@link ordertimeout.config.AppConfig.Events#webhooksFingerprint}); {@code $6}: whether its status cache is on;
   * {@code $7}: the shards it owns.
   * Answers too how many other nodes there are ({@link #otherNodes}), and how many of them have their status cache on.
   */
  private static String holdNodeLease(String highWater, String condition) {
    return """
        UPDATE node_leases
        SET holder = $2, expires_at = now() + $3 * interval '1 millisecond', id_high_water_millis = %s,
            renewed_at = now(), webhooks = $5, status_cache = $6, shards = $7
        WHERE %s
        RETURNING id_high_water_millis, (%s) AS other_nodes, (%s AND o.status_cache) AS other_status_caches"""
        .formatted(highWater, condition, otherNodes("$3"), otherNodes("$3"));
  }

  /**
   * The other nodes than {@code $1}: those with a live lease, and those whose status cache was on and whose lease
   * ended less than a lease ({@code leaseMillis}) ago without being released: a node that stopped renewing for a
   * while (its database away) may renew again and serve writes another node's cache would not see.
   */
  private static String otherNodes(String leaseMillis) {
    return "SELECT count(*) FROM node_leases o WHERE o.node_id <> $1 AND (o.expires_at > now() OR o.status_cache "
        + "AND o.expires_at > now() - " + leaseMillis + " * interval '1 millisecond')";
  }

  /** Other nodes ({@link #otherNodes}, {@code $2} the lease) with their status cache on. */
  static final String COUNT_OTHER_STATUS_CACHES = otherNodes("$2") + " AND o.status_cache";

  /** The shards holder {@code $2} of the lease on {@code $1} owns now: {@code $3}. */
  static final String CLAIM_NODE_SHARDS = "UPDATE node_leases SET shards = $3 WHERE node_id = $1 AND holder = $2";

  /**
   * The shards below {@code $1} (the shard count) that no live lease claims, by the database clock: in a cluster, those
   * of a node that died while the broker was away, which no other node owns until the broker is back, and for a
   * moment those a settling group has not given out yet.
   */
  static final String UNCLAIMED_SHARDS = """
      SELECT s.shard FROM generate_series(0, $1::int - 1) AS s (shard)
      WHERE NOT EXISTS (SELECT 1 FROM node_leases WHERE expires_at > now() AND s.shard = ANY (shards))
      ORDER BY s.shard""";

  /** Frees the lease at once and leaves the exact last millisecond of its ids to the next holder. */
  static final String RELEASE_NODE_LEASE = """
      UPDATE node_leases SET expires_at = now(), id_high_water_millis = $3, renewed_at = now(), status_cache = false
      WHERE node_id = $1 AND holder = $2""";

  // ---- create, a group of orders per transaction

  /**
   * Sent first in a create group's transaction, and before {@link #DISPATCH_EVENTS} in the dispatcher's: their
   * statements are planned once per session and the plan kept (decision 0038). Each has one plan whatever its arrays
   * hold (lookups by key, the functions of V17 and V19), and sequential scans are off so that a plan made while a table
   * was small never reads it whole once it grows.
   */
  static final String PLAN_ONCE_PER_SESSION =
      "SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off";

  /**
   * Held until commit: a second request with the same idempotency key finds it taken. Rows come back
   * in the order of the array (a function scan of unnest keeps it).
   */
  static final String TRY_LOCK_IDEMPOTENCY_KEYS = """
      SELECT pg_try_advisory_xact_lock(k) AS locked FROM unnest($1::bigint[]) WITH ORDINALITY AS t (k, n) ORDER BY n""";

  static final String SELECT_IDEMPOTENCY_KEY =
      "SELECT request_hash, response_body FROM idempotency_keys WHERE client = $1 AND key = $2";

  static final String SELECT_IDEMPOTENCY_KEYS = """
      SELECT k.client, k.key, k.request_hash, k.response_status, k.response_body
      FROM idempotency_keys k JOIN unnest($1::text[], $2::text[]) AS wanted (client, key)
        ON k.client = wanted.client AND k.key = wanted.key""";

  /**
   * Serialises each user's creates, and each client's near its caps, so that the caps cannot be raced past; far from
   * them a client's lock is taken shared, with its slot lock of this connection ($1's key plus the backend pid modulo
   * $3) exclusive ({@link CapHeadroom}). The keys come sorted and are locked in that order, so two groups cannot
   * deadlock on them.
   */
  static final String LOCK_USERS_AND_CLIENTS = """
      SELECT CASE t.mode WHEN 'shared' THEN pg_advisory_xact_lock_shared(t.k)
                         WHEN 'slot' THEN pg_advisory_xact_lock(t.k + pg_backend_pid() % $3)
                         ELSE pg_advisory_xact_lock(t.k) END
      FROM unnest($1::bigint[], $2::text[]) AS t (k, mode)""";

  /** The unpaid orders of each user ({@code $1} clients, {@code $2} their user ids), a row each (migration V17). */
  static final String COUNT_UNPAID_OF_USERS = "SELECT client, user_id, unpaid FROM unpaid_of_users($1, $2)";

  /** What each client in {@code $1} holds: the sums over its stripes (migration V3); no row for a client holding nothing yet. */
  static final String SELECT_CLIENT_HOLDINGS = """
      SELECT client, sum(unpaid)::bigint AS unpaid, sum(units)::bigint AS units
      FROM client_holdings WHERE client = ANY($1) GROUP BY client""";

  /**
   * Locks the inventory rows of SKUs {@code $1} in SKU order and returns what each has available, the units closes
   * gave back included (V24). The sum is written out rather than called as {@code units_released}: every create group
   * runs this, and with the function it took 0.17-0.21 ms a call, against 0.10 written out (SteadyStateBenchmark over
   * 1,000 SKUs at 600 creates/s, 2026-12-05).
   */
  static final String LOCK_STOCK_BY_SKU = """
      SELECT inv.sku,
             inv.available + coalesce((SELECT sum(r.units) FROM inventory_released r WHERE r.sku = inv.sku), 0)::bigint
               AS available
      FROM inventory inv WHERE inv.sku = ANY($1) ORDER BY inv.sku FOR UPDATE""";

  /** The SKUs of order {@code $1}. */
  static final String SKUS_OF_ORDER = "SELECT sku FROM order_items WHERE order_id = $1";

  /**
   * Of the SKUs {@code $1}, those whose inventory row is held now by a transaction that has for more than {@code $2}
   * milliseconds sat idle, waiting for its client (an admin's open transaction, a paused node), or, not being one of
   * the service's, run one statement without waiting for a lock (a script's long update); or by one this session may
   * not see; never waits. Any other holder is passing through: a transaction between short statements, one waiting for
   * a lock itself (a create group that took this row in SKU order and waits for the row really held), one about to
   * roll back, a session of another node running a statement (a create group slowed by I/O), and any session of this
   * node (same {@code application_name}): its own group that looks idle only because this node's event loop is busy
   * between two statements. A holder that ended between the row's probe and the look at the locks
   * holds no lock any more, and its row is free: not reported either (reporting it refused a free SKU's creates for a
   * while).
   */
  static final String LOCKED_SKUS = """
      WITH free AS (SELECT sku FROM inventory WHERE sku = ANY($1) FOR UPDATE SKIP LOCKED)
      SELECT i.sku FROM inventory i
      WHERE i.sku = ANY($1) AND i.sku NOT IN (SELECT sku FROM free)
        AND EXISTS (
          SELECT 1 FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'transactionid' AND l.granted AND l.transactionid = i.xmax
            AND (a.state IS NULL
                 OR (a.state_change < now() - make_interval(secs => $2 / 1000.0)
                     AND (a.state = 'idle in transaction' AND a.application_name <> current_setting('application_name')
                          OR a.state = 'active' AND a.wait_event_type IS DISTINCT FROM 'Lock'
                             AND a.application_name NOT LIKE '{service}%'))))"""
      .replace("{service}", Pools.SESSION_NAME_PREFIX);

  /**
   * The orders, their items, log lines, ORDER_CREATED events and stock reservations, from parallel arrays: {@code $1}
   * ids, {@code $2} shards, {@code $3} clients, {@code $4} user ids, {@code $5} categories, {@code $6} timeouts and
   * {@code $7} reminder delays in seconds; the items as {@code $8} order ids, {@code $9} SKUs, {@code $10} quantities.
   * One statement, planned once per session (migration V19). An order whose id is taken already inserts nothing at all
   * (no items, no reservation), and is missing from the rows returned.
   */
  static final String INSERT_ORDERS =
      "SELECT id, created_at, close_at, remind_at FROM create_orders($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

  static final String INSERT_IDEMPOTENCY_KEYS = """
      INSERT INTO idempotency_keys (client, key, request_hash, response_status, response_body, order_id)
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[])""";

  /**
   * An event's payload: the order as it stands after the change, so that a consumer never has to call back. The
   * fields of the API's order (times in UTC), with {@code client} and, once closed, {@code reason}; fields not
   * reached yet (paidAt, closedAt, reason, remindAt, holdUntil) are left out. {@code o} names a row with the orders columns,
   * {@code items} is a JSON array expression of its items.
   */
  static String eventPayload(String o, String items) {
    return """
        jsonb_strip_nulls(jsonb_build_object(
          'orderId', %1$s.id::text, 'client', %1$s.client, 'userId', %1$s.user_id, 'category', %1$s.category,
          'status', %1$s.status, 'reason', %1$s.close_reason, 'items', %2$s,
          'createdAt', %3$s, 'closeAt', %4$s, 'holdUntil', %5$s, 'remindAt', %6$s, 'paidAt', %7$s, 'closedAt', %8$s))"""
        .formatted(o, items, utc(o + ".created_at"), utc(o + ".close_at"), utc(o + ".hold_until"), utc(o + ".remind_at"),
            utc(o + ".paid_at"), utc(o + ".closed_at"));
  }

  /** A timestamp as the API writes it: ISO-8601 in UTC with a Z. */
  private static String utc(String timestamp) {
    return "to_char(" + timestamp + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
  }

  /**
   * The items of order {@code o.id} as a JSON array, by SKU ({@link #ITEMS_BY_SKU}), in a statement of the one order
   * {@code $1}: the id given again keeps only its partition of order_items in the plan, which the correlation alone
   * does not (statements are planned on every call, decision 0007). Statements of an array of ids read their items
   * once instead ({@link #ITEMS_OF_ORDERS_1}).
   */
  private static final String ITEMS_JSON_OF_ORDER_1 = "(SELECT jsonb_agg(jsonb_build_object('sku', i.sku, 'qty', "
      + "i.qty) " + ITEMS_BY_SKU + ") FROM order_items i WHERE i.order_id = o.id AND i.order_id = $1)";

  /**
   * The items of the orders {@code $1}, a row per order: {@code json} as an event's payload writes them,
   * {@code skus} and {@code qtys} as {@link #SELECT_ORDERS} reads them and {@link #heldInItems} sums them. Read once
   * for the statement, where {@code order_id = ANY($1)} keeps only the partitions of those ids in the plan; a lookup
   * per order ({@code WHERE i.order_id = o.id}) was planned over every partition of order_items on every call
   * (decision 0007).
   * With {@code i.order_id = ANY($1)} beside such a correlation, each order's lookup walked the whole array (a close
   * batch of 4,000 took 4.2 s, not 0.74).
   */
  private static final String ITEMS_OF_ORDERS_1 = """
      items AS (
        SELECT i.order_id, jsonb_agg(jsonb_build_object('sku', i.sku, 'qty', i.qty) %s) AS json, %s
        FROM order_items i WHERE i.order_id = ANY($1) GROUP BY i.order_id)""".formatted(ITEMS_BY_SKU, ITEMS_AS_ARRAYS);

  // ---- pay and close

  /**
   * The compare-and-set of one pay, with its stock sold, its log line and ORDER_PAID event; {@code $2} is the client,
   * null for an admin (any client's order). By primary key. The client check is written {@code IS NOT DISTINCT FROM}
   * (the same as {@code =} here: client is never null) so that it cannot be an index condition: with
   * {@code client = $2} the planner, on a table without statistics yet, took orders_unpaid_by_user and read every
   * unpaid order of the client to find one (3 ms with 3,000 unpaid, most of PostgreSQL's time in the steady-state
   * benchmark). An order may be paid before its deadline or before the end of the hold a started payment got
   * ({@code hold_until}): the negation of {@link #CLOSE_DUE}'s condition.
   */
  static final String PAY = """
      WITH paid AS (
        UPDATE orders SET status = 'PAID', paid_at = now()
        WHERE id = $1 AND client IS NOT DISTINCT FROM coalesce($2, client) AND status IS NOT DISTINCT FROM 'UNPAID'
          AND (close_at > now() OR hold_until > now())
        RETURNING id, client, user_id, category, status, close_reason, created_at, close_at, remind_at, hold_until, paid_at, closed_at),
      %s,
      logged AS (
        INSERT INTO order_log (order_id, event, at) SELECT id, 'PAID', paid_at FROM paid),
      evented AS (
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT o.id, o.client, 'ORDER_PAID', %s, o.paid_at FROM paid o)
      SELECT id FROM paid""".formatted(stockSold(heldByOrder1("paid")),
      eventPayload("o", ITEMS_JSON_OF_ORDER_1));

  /**
   * {@link #PAY} for a group: {@code $1} order ids, {@code $2} the client of each (null for an admin). Only rows no other transaction
   * holds are paid (SKIP LOCKED), so the group never waits for a row while it holds others. Returns the orders paid as
   * {@link #SELECT_ORDERS} reads them (their state after the pay, items as arrays; an order without items, which the
   * API never makes, is left out as there), so that a group that paid all its orders need not read them again; an id
   * given twice is paid once. One statement, planned once per session (migration V21: this class's pay, stock move
   * and event payload, written out).
   */
  static final String PAY_ORDERS = "SELECT * FROM pay_orders($1, $2)";

  /**
   * The compare-and-set of a close, with its stock given back, its log line and ORDER_CLOSED event. {@code $1} is an
   * array of ids, {@code $2} the reason; {@code casCondition} adds the client check for requests ({@code $3}, null for
   * admins); the deadline check of timeouts is in {@link #CLOSE_DUE}'s function. A closed order's failed closes are
   * forgotten (its close_failures row, parked or not, goes). The orders' items are read once
   * ({@link #ITEMS_OF_ORDERS_1}).
   */
  private static String close(String casCondition) {
    return """
        WITH closed AS (
          UPDATE orders SET status = 'CLOSED', close_reason = $2, closed_at = clock_timestamp()
          WHERE id = ANY($1) AND status IS NOT DISTINCT FROM 'UNPAID' %s
          RETURNING id, client, user_id, category, status, close_reason, created_at, close_at, remind_at, hold_until, paid_at, closed_at),
        %s,
        %s,
        forgotten AS (
          DELETE FROM close_failures WHERE order_id IN (SELECT id FROM closed)),
        logged AS (
          INSERT INTO order_log (order_id, event, detail, at) SELECT id, 'CLOSED', close_reason, closed_at FROM closed),
        evented AS (
          INSERT INTO outbox (order_id, client, type, payload, created_at)
          SELECT o.id, o.client, 'ORDER_CLOSED', %s, o.closed_at FROM closed o LEFT JOIN items it ON it.order_id = o.id)
        SELECT id, close_at, hold_until, closed_at FROM closed"""
        .formatted(casCondition, ITEMS_OF_ORDERS_1, stockReleased(heldInItems("closed")),
            eventPayload("o", "it.json"));
  }

  /** A parked order (close_failures.parked_at set): the wheel and the sweep leave it to an admin's retry. */
  private static final String NOT_PARKED =
      "NOT EXISTS (SELECT 1 FROM close_failures f WHERE f.order_id = orders.id AND f.parked_at IS NOT NULL)";

  /**
   * The close of the due orders among {@code $1} for reason {@code $2}, as {@link #close} writes a close. Timeouts
   * compare the deadline, and the hold of a started payment, with the database clock: never early, whatever the node's
   * clock says, and never before {@code hold_until}. A parked order is not closed here (it waits for an admin's retry,
   * which unparks it first). One statement, planned once per session (migration V22: this class's close for that
   * condition, written out).
   */
  static final String CLOSE_DUE = "SELECT id, close_at, hold_until, closed_at FROM close_due_orders($1, $2)";

  /** Cancel and admin close: any unpaid order of the client, due or not. */
  static final String CLOSE_ON_REQUEST = close("AND ($3::text IS NULL OR client = $3)");

  /** Of the orders {@code $1}, those whose row no other transaction holds, locked; never waits. */
  static final String LOCK_FREE_ORDERS = "SELECT id FROM orders WHERE id = ANY($1) FOR UPDATE SKIP LOCKED";

  /**
   * Orders of a close batch that the database clock says are not due yet (the node's clock ran
   * ahead), with how long until they are, to be put back into the wheel by the node's clock.
   * Which orders: those not due at {@code now()}, the time the close compared with, so that every order it left is
   * put back. How long: from {@code clock_timestamp()}, this statement's time. The node adds it to its clock when the
   * answer comes, so counted from the transaction's start it would put them back as late as the close waited for a
   * row lock (in a cluster replacing the owner's timer). 0 for an order that fell due meanwhile: put back at once.
   */
  static final String SELECT_NOT_YET_DUE = """
      SELECT id,
             greatest(0, (extract(epoch FROM greatest(close_at, hold_until) - clock_timestamp()) * 1000)::bigint)
               AS due_in_millis
      FROM orders
      WHERE id = ANY($1) AND status IS NOT DISTINCT FROM 'UNPAID' AND greatest(close_at, hold_until) > now()""";

  /**
   * Locks the inventory rows of the orders' SKUs in SKU order (concurrent batches touching many SKUs
   * would deadlock otherwise) and returns how much of each the orders hold, and what is available: one pass over
   * their items.
   */
  static final String LOCK_STOCK_OF_ORDERS = """
      WITH held AS (SELECT sku, sum(qty) AS qty FROM order_items WHERE order_id = ANY($1) GROUP BY sku)
      SELECT inv.sku, held.qty, inv.available + units_released(inv.sku) AS available
      FROM inventory AS inv JOIN held ON held.sku = inv.sku
      ORDER BY inv.sku FOR UPDATE OF inv""";

  /**
   * What a close does to its orders' stock, in its statement: the reservation goes back to what is available, counted
   * apart so that the inventory rows, which creates lock, are left alone (migration V24): the units of {@code held},
   * what the orders hold of each SKU, on the closing session's stripe of inventory_released.
   */
  private static String stockReleased(String held) {
    return countedOnStripe("released", "inventory_released", held);
  }

  /**
   * What a pay does to its orders' stock, in its statement: the reservation becomes a sale, {@code available} does not
   * move, so the inventory rows are left alone (migration V23): the units of {@code held}, what the orders hold of each
   * SKU, are counted on the paying session's stripe of inventory_paid.
   */
  private static String stockSold(String held) {
    return countedOnStripe("sold", "inventory_paid", held);
  }

  /**
   * CTE {@code name}: the units of {@code held} (sku, qty) added to {@code table}'s stripe of this session (backend pid
   * mod 16), in SKU order, so that two transactions on one stripe take its rows in the same order.
   */
  private static String countedOnStripe(String name, String table, String held) {
    return """
        held AS (%s),
        %s AS (
          INSERT INTO %s AS counted (sku, stripe, units)
          SELECT held.sku, pg_backend_pid() %% 16, held.qty FROM held ORDER BY held.sku
          ON CONFLICT (sku, stripe) DO UPDATE SET units = counted.units + EXCLUDED.units)"""
        .formatted(held, name, table);
  }

  /** What the orders of CTE {@code changed} hold of each SKU, from the statement's {@link #ITEMS_OF_ORDERS_1}. */
  private static String heldInItems(String changed) {
    return "SELECT s.sku, sum(s.qty) AS qty FROM %s c JOIN items it ON it.order_id = c.id, "
        .formatted(changed) + "unnest(it.skus, it.qtys) AS s (sku, qty) GROUP BY s.sku";
  }

  /** What order {@code $1} holds of each SKU, if it is in CTE {@code changed} (by key: its partition only). */
  private static String heldByOrder1(String changed) {
    return "SELECT i.sku, sum(i.qty) AS qty FROM order_items i JOIN %s c ON c.id = i.order_id ".formatted(changed)
        + "WHERE i.order_id = $1 GROUP BY i.sku";
  }

  // ---- payments at the deadline's edge and deadline changes (OrderStore): each by primary key, in the transaction of
  // its request, the order's row locked before any inventory row (as pays and closes lock them)

  /**
   * An order's row, locked, with what its request decides on: {@code due} when the database clock has passed its
   * deadline and the hold of a started payment; no row when there is no such order for client {@code $2} (null: any).
   */
  static final String LOCK_ORDER = """
      SELECT status, close_reason, created_at, close_at, hold_until, closed_at, late_payment_at,
             greatest(close_at, hold_until) <= now() AS due, now() AS db_now
      FROM orders WHERE id = $1 AND client IS NOT DISTINCT FROM coalesce($2, client) FOR UPDATE""";

  /**
   * Payment started: the close of an unpaid order before its deadline waits {@code $3} seconds past it, once per order
   * (no row when it has a hold already, or is not unpaid before its deadline).
   */
  static final String START_PAYMENT = """
      WITH held AS (
        UPDATE orders SET hold_until = close_at + $3 * interval '1 second'
        WHERE id = $1 AND client IS NOT DISTINCT FROM coalesce($2, client) AND status IS NOT DISTINCT FROM 'UNPAID'
          AND hold_until IS NULL AND close_at > now()
        RETURNING id, hold_until),
      logged AS (
        INSERT INTO order_log (order_id, event, detail, at) SELECT id, 'PAYMENT_STARTED', 'hold until ' || hold_until, now() FROM held)
      SELECT id FROM held""";

  /** An order's fields as events carry them, from the row aliased {@code o}, the order {@code $1}. */
  private static final String ORDER_FIELDS = eventPayload("o", ITEMS_JSON_OF_ORDER_1);

  /**
   * The compare-and-set of a deadline change: {@code $2} the new deadline, {@code $3} the deadline it replaces. The
   * reminder moves with the deadline, and is sent again when its new time is still to come. A payment's hold that the
   * new deadline passes is over: a payment started before the new deadline holds it again. Log line and
   * ORDER_DEADLINE_EXTENDED event (the order's fields and {@code previousCloseAt}).
   */
  static final String MOVE_DEADLINE_IF_UNCHANGED = """
      WITH moved AS (
        UPDATE orders SET close_at = $2, remind_at = remind_at + ($2 - close_at),
               reminded_at = CASE WHEN remind_at + ($2 - close_at) > now() THEN NULL ELSE reminded_at END,
               hold_until = CASE WHEN hold_until > $2 THEN hold_until END
        WHERE id = $1 AND status IS NOT DISTINCT FROM 'UNPAID' AND close_at = $3
        RETURNING *),
      logged AS (
        INSERT INTO order_log (order_id, event, detail, at) SELECT id, 'EXTENDED', 'from ' || $3::timestamptz, now() FROM moved),
      evented AS (
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT o.id, o.client, 'ORDER_DEADLINE_EXTENDED', %s || jsonb_build_object('previousCloseAt', {previous}), now()
        FROM moved o)
      SELECT id FROM moved""".formatted(ORDER_FIELDS).replace("{previous}", utc("$3::timestamptz"));

  /**
   * A pay that came after the order's close: marks it ({@code late_payment_at}) and writes ORDER_LATE_PAYMENT (the
   * order's fields, {@code latePaymentAt} and why it was not paid again, {@code $2}) once per order: no row when one
   * was written already.
   */
  static final String NOTE_LATE_PAYMENT = """
      WITH noted AS (
        UPDATE orders SET late_payment_at = now()
        WHERE id = $1 AND status = 'CLOSED' AND late_payment_at IS NULL
        RETURNING *),
      logged AS (
        INSERT INTO order_log (order_id, event, detail, at) SELECT id, 'LATE_PAYMENT', $2, late_payment_at FROM noted),
      evented AS (
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT o.id, o.client, 'ORDER_LATE_PAYMENT', %s || jsonb_build_object('latePaymentAt', {latePaymentAt}, 'notReopened', $2::text),
               o.late_payment_at
        FROM noted o)
      SELECT id FROM noted""".formatted(ORDER_FIELDS).replace("{latePaymentAt}", utc("o.late_payment_at"));

  /**
   * A late pay of an order closed by timeout pays it after all (orders.reopenOnLatePayment), its stock taken again
   * ({@link #TAKE_SOLD_STOCK}) in the same transaction: CLOSED to PAID, with a PAID log line and an ORDER_PAID event
   * flagged {@code reopened}, carrying the close it undoes ({@code $2} reason, {@code $3} time).
   */
  static final String REOPEN_PAID = """
      WITH reopened AS (
        UPDATE orders SET status = 'PAID', paid_at = now(), reopened_at = now(), close_reason = NULL, closed_at = NULL
        WHERE id = $1 AND status = 'CLOSED' AND close_reason = 'TIMEOUT' AND late_payment_at IS NULL
        RETURNING *),
      logged AS (
        INSERT INTO order_log (order_id, event, detail, at) SELECT id, 'PAID', 'REOPENED', paid_at FROM reopened),
      evented AS (
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT o.id, o.client, 'ORDER_PAID', %s || jsonb_build_object('reopened', true,
                 'reopenedFrom', jsonb_build_object('closeReason', $2::text, 'closedAt', {closedBefore})),
               o.paid_at
        FROM reopened o)
      SELECT id FROM reopened""".formatted(ORDER_FIELDS).replace("{closedBefore}", utc("$3::timestamptz"));

  /**
   * A closed order paid after all: its units go from available straight to sold ({@code reserved} counts unpaid
   * orders only, and this one was not unpaid); rows locked by {@link #LOCK_STOCK_OF_ORDERS} first. {@code $1} SKUs,
   * {@code $2} quantities.
   */
  static final String TAKE_SOLD_STOCK = """
      UPDATE inventory AS inv
      SET available = inv.available - d.qty, updated_at = now()
      FROM unnest($1::text[], $2::bigint[]) AS d (sku, qty)
      WHERE inv.sku = d.sku""";

  // ---- reminders

  static final String REMIND_DUE = """
      WITH reminded AS (
        UPDATE orders SET reminded_at = now()
        WHERE id = ANY($1) AND status IS NOT DISTINCT FROM 'UNPAID' AND reminded_at IS NULL AND remind_at <= now()
          AND close_at > now()
        RETURNING id, client, user_id, category, status, close_reason, created_at, close_at, remind_at, reminded_at, hold_until,
                  paid_at, closed_at),
      {items},
      logged AS (
        INSERT INTO order_log (order_id, event, at) SELECT id, 'REMINDED', reminded_at FROM reminded),
      evented AS (
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT o.id, o.client, 'ORDER_CLOSE_REMINDER', {payload}, o.reminded_at
        FROM reminded o LEFT JOIN items it ON it.order_id = o.id)
      SELECT id FROM reminded"""
      .replace("{items}", ITEMS_OF_ORDERS_1).replace("{payload}", eventPayload("o", "it.json"));

  /**
   * Orders of a reminder batch whose reminder is not due yet by the database clock, with how long until it is:
   * chosen by {@code now()}, as {@link #REMIND_DUE} chose, timed from {@code clock_timestamp()}, as
   * {@link #SELECT_NOT_YET_DUE} is.
   */
  static final String SELECT_NOT_YET_REMINDED = """
      SELECT id, greatest(0, (extract(epoch FROM remind_at - clock_timestamp()) * 1000)::bigint) AS due_in_millis
      FROM orders
      WHERE id = ANY($1) AND status IS NOT DISTINCT FROM 'UNPAID' AND reminded_at IS NULL AND remind_at > now()""";

  // ---- reload and sweep: keyset pages over partial indexes by shard

  /** Answered from the index alone (no table reads once the table is vacuumed). */
  static final String PENDING_DEADLINES_PAGE = """
      SELECT id, close_at AS due FROM orders
      WHERE shard = $1 AND status = 'UNPAID' AND (close_at, id) > ($2, $3)
      ORDER BY close_at, id LIMIT $4""";

  /** Reminders not yet sent, over their own small partial index (shard, remind_at, id). */
  static final String PENDING_REMINDERS_PAGE = """
      SELECT id, remind_at AS due FROM orders
      WHERE shard = $1 AND status = 'UNPAID' AND reminded_at IS NULL AND remind_at IS NOT NULL
        AND (remind_at, id) > ($2, $3)
      ORDER BY remind_at, id LIMIT $4""";

  /**
   * Unpaid orders whose close waits for a started payment, over their own tiny partial index: the close timer of each
   * is put at the later of its deadline and its hold, replacing the one the deadline page gave it.
   */
  static final String PENDING_HOLDS_PAGE = """
      SELECT id, hold_until AS cursor_at, greatest(close_at, hold_until) AS due FROM orders
      WHERE shard = $1 AND status = 'UNPAID' AND hold_until IS NOT NULL AND (hold_until, id) > ($2, $3)
      ORDER BY hold_until, id LIMIT $4""";

  /**
   * The timers of the unpaid orders after id {@code $1} (the id of a moment: every later order was created after it)
   * in the shards {@code $2}, by id: the close at the later of deadline and hold, the reminder if not sent. Planned
   * for its id, it reads only the partitions from that id's on, by index (PartitionPlansTest).
   */
  static final String RECENT_PENDING_PAGE = """
      SELECT id, greatest(close_at, hold_until) AS close_due, CASE WHEN reminded_at IS NULL THEN remind_at END AS remind_due
      FROM orders
      WHERE id > $1 AND shard = ANY($2) AND status = 'UNPAID'
      ORDER BY id LIMIT $3""";

  /**
   * An unpaid order overdue by more than {@code $2} seconds. Orders whose close waits for a started payment are not
   * overdue until their hold ends. Parked orders are not the sweep's: they are counted by {@link #COUNT_PARKED} (a
   * gauge, an alarm) instead.
   */
  private static final String OVERDUE_CLOSE = "status = 'UNPAID' AND close_at < now() - $2::int * interval '1 second' "
      + "AND (hold_until IS NULL OR hold_until < now() - $2::int * interval '1 second') AND " + NOT_PARKED;

  /** A reminder not sent more than {@code $2} seconds after it fell due, of an order whose deadline has not passed. */
  private static final String OVERDUE_REMINDER = "status = 'UNPAID' AND reminded_at IS NULL AND remind_at IS NOT NULL "
      + "AND remind_at < now() - $2::int * interval '1 second' AND close_at > now()";

  /**
   * Which of the shards {@code $1} have an overdue close, and which an overdue reminder ({@code $2}: the grace): one
   * statement a sweep pass, each shard probed in its partial indexes, so that only those shards are paged. Each page
   * statement is planned over every partition on every call (1.1-1.4 ms a call at 600 creates/s, nearly all planning):
   * a page of each kind for each of 64 shards, with nothing to find, spent about 3% of a core planning at 600
   * creates/s, 2% on a node idle. A shard's reminders are probed in the order of their own index: on a day's
   * partition not analyzed yet the planner otherwise took the unpaid orders' deadline index, bounded by
   * {@code close_at > now()}, and walked every order not yet due (PartitionPlansTest).
   */
  static final String SHARDS_WITH_OVERDUE = """
      SELECT s.shard, c.shard IS NOT NULL AS closes, r.shard IS NOT NULL AS reminders
      FROM unnest($1::int[]) AS s (shard)
      LEFT JOIN LATERAL (SELECT shard FROM orders WHERE shard = s.shard AND %s LIMIT 1) c ON true
      LEFT JOIN LATERAL (SELECT shard FROM orders WHERE shard = s.shard AND %s ORDER BY remind_at LIMIT 1) r ON true"""
      .formatted(OVERDUE_CLOSE, OVERDUE_REMINDER);

  /** A keyset page of one shard's overdue closes. */
  static final String OVERDUE_PAGE = """
      SELECT id, close_at AS due FROM orders
      WHERE shard = $1 AND %s AND (close_at, id) > ($3, $4)
      ORDER BY close_at, id LIMIT $5""".formatted(OVERDUE_CLOSE);

  // ---- failed closes and parked orders (CloseFailures)

  /**
   * One more failed close of unpaid order {@code $1} ({@code $2} the error), parking it once its count reaches
   * {@code $3}; nothing when the order is no longer unpaid or is parked already. Returns the count, and whether this
   * failure parked it.
   */
  static final String RECORD_CLOSE_FAILURE = """
      INSERT INTO close_failures AS f (order_id, failures, first_failed_at, last_failed_at, last_error, parked_at)
      SELECT o.id, 1, now(), now(), $2, CASE WHEN $3 <= 1 THEN now() END
      FROM orders o WHERE o.id = $1 AND o.status IS NOT DISTINCT FROM 'UNPAID'
      ON CONFLICT (order_id) DO UPDATE
        SET failures = f.failures + 1, last_failed_at = now(), last_error = EXCLUDED.last_error,
            parked_at = CASE WHEN f.failures + 1 >= $3 THEN now() END
        WHERE f.parked_at IS NULL
      RETURNING f.failures, f.parked_at IS NOT NULL AS parked""";

  /** Parked unpaid orders after id {@code $1}, by id, {@code $2} at most. */
  static final String PARKED_PAGE = """
      SELECT f.order_id, o.client, o.user_id, o.close_at, f.failures, f.first_failed_at, f.last_failed_at, f.last_error, f.parked_at
      FROM close_failures f JOIN orders o ON o.id = f.order_id
      WHERE f.parked_at IS NOT NULL AND o.status = 'UNPAID' AND f.order_id > $1
      ORDER BY f.order_id LIMIT $2""";

  /** Live nodes whose webhooks' fingerprint is not {@code $1} (those of an older version, which write none, apart). */
  static final String COUNT_NODES_WITH_OTHER_WEBHOOKS =
      "SELECT count(*) FROM node_leases WHERE expires_at > now() AND webhooks <> $1";

  static final String COUNT_PARKED = """
      SELECT count(*) FROM close_failures f JOIN orders o ON o.id = f.order_id
      WHERE f.parked_at IS NOT NULL AND o.status = 'UNPAID'""";

  /**
   * The start of an admin's retry of order {@code $1}: its failure count goes (it is unparked). One row, with the
   * order's status and whether it was parked (and now is not); no row when there is no such order.
   */
  static final String UNPARK = """
      WITH target AS (SELECT id, status FROM orders WHERE id = $1),
      unparked AS (
        DELETE FROM close_failures f USING target t
        WHERE f.order_id = t.id AND f.parked_at IS NOT NULL AND t.status = 'UNPAID'
        RETURNING f.order_id)
      SELECT t.status, EXISTS (SELECT 1 FROM unparked) AS unparked FROM target t""";

  /** A keyset page of one shard's overdue reminders. */
  static final String OVERDUE_REMINDERS_PAGE = """
      SELECT id, remind_at AS due FROM orders
      WHERE shard = $1 AND %s AND (remind_at, id) > ($3, $4)
      ORDER BY remind_at, id LIMIT $5""".formatted(OVERDUE_REMINDER);

  // ---- the operator dashboard (admin)

  /**
   * The latest closes, newest first: a backward scan of order_log's primary key, stopping after
   * {@code $1} CLOSED lines, each joined with its order by primary key. Lateness counts from the hold of a started
   * payment when it ended after the deadline, as the held-lateness metric does.
   */
  static final String LATEST_CLOSES = """
      SELECT l.order_id, o.close_reason, o.close_at, o.closed_at,
             (extract(epoch FROM o.closed_at - greatest(o.close_at, o.hold_until)) * 1000)::bigint AS lateness_millis
      FROM order_log l JOIN orders o ON o.id = l.order_id
      WHERE l.event = 'CLOSED'
      ORDER BY l.id DESC LIMIT $1""";

  /**
   * One order's log lines in the order they were written (order_log_by_order); one row with a null
   * event when the order exists without lines (retention), none when there is no such order.
   */
  static final String ORDER_LOG = """
      SELECT l.event, l.detail, l.at
      FROM orders o LEFT JOIN order_log l ON l.order_id = o.id
      WHERE o.id = $1
      ORDER BY l.id""";

  // ---- operators' search and bulk jobs (OrderSearch, BulkJobStore)

  /**
   * The conditions of a search, one per filter field present, joined with AND by {@link OrderSearch}; {@code %d} is the
   * number of the value's parameter (always bound). Each is served by an index of migration V9 or V1.
   */
  static final String MATCH_STATUS = "o.status = $%d";
  static final String MATCH_CLIENT = "o.client = $%d";
  static final String MATCH_USER = "o.user_id = $%d";
  static final String MATCH_SKU = "EXISTS (SELECT 1 FROM order_items s WHERE s.order_id = o.id AND s.sku = $%d)";
  static final String MATCH_DUE_AFTER = "o.close_at >= $%d";
  static final String MATCH_DUE_BEFORE = "o.close_at < $%d";
  static final String MATCH_CREATED_AFTER = "o.created_at >= $%d";
  static final String MATCH_CREATED_BEFORE = "o.created_at < $%d";
  /** A page goes on below the last id of the previous one (newest first). */
  static final String MATCH_BELOW_ID = "o.id < $%d";
  static final String MATCH_ANY = "true";

  /** One page of orders matching {@code where} (its last parameter {@code $%d}: how many), newest first. */
  static String searchPage(String where, int limitParameter) {
    return """
        WITH page AS (SELECT o.id FROM orders o WHERE %s ORDER BY o.id DESC LIMIT $%d)
        SELECT o.id, o.client, o.user_id, o.category, o.status, o.close_reason, o.created_at, o.close_at, o.remind_at,
               o.paid_at, o.closed_at, o.hold_until, %s
        FROM page JOIN orders o ON o.id = page.id JOIN order_items i ON i.order_id = o.id
        GROUP BY o.id
        ORDER BY o.id DESC""".formatted(where, limitParameter, ITEMS_AS_ARRAYS);
  }

  /** How many orders match {@code where}, how many of them are unpaid, and the newest (-1 when none): a bulk job's total and its bound. */
  static String countMatches(String where) {
    return "SELECT count(*) AS total, count(*) FILTER (WHERE o.status = 'UNPAID') AS unpaid, coalesce(max(o.id), -1) AS upper_id"
        + " FROM orders o WHERE " + where;
  }

  /** The orders named by id ({@code $1}), for a bulk action's dry run. */
  static final String MATCH_IDS = "o.id = ANY($1)";

  /**
   * The next batch of a filter's job: matching ids above {@code $%d} (the last batch's end) up to {@code $%d} (the job's
   * bound), of orders created by {@code $%d} (the job's submission, by the database's clock), oldest first, {@code $%d}
   * of them. The id bound alone does not keep out the orders created after the submission: an id carries the clock of
   * the node that minted it, which may run behind the one that minted the bound (decisions 0017, 0022). The time is a
   * filter on the rows the id range reads, by whichever index the filter's own conditions use.
   */
  static String nextMatches(String where, int afterParameter, int upToParameter, int createdByParameter,
                            int limitParameter) {
    return ("SELECT o.id FROM orders o WHERE %s AND o.id > $%d AND o.id <= $%d AND o.created_at <= $%d"
        + " ORDER BY o.id LIMIT $%d")
        .formatted(where, afterParameter, upToParameter, createdByParameter, limitParameter);
  }

  /** The next batch of an ids job: its ids above its last batch's end, {@code $2} of them. */
  static final String NEXT_LISTED = """
      SELECT x AS id FROM bulk_jobs j CROSS JOIN LATERAL unnest(j.ids) AS x
      WHERE j.id = $1 AND x > j.last_id ORDER BY x LIMIT $2""";

  private static final String JOB_COLUMNS = """
      id, kind, status, client, ids IS NOT NULL AS by_ids, coalesce(cardinality(ids), 0) AS id_count, filter::text AS filter,
      upper_id, extend_seconds, total, done, changed, skipped, failed, last_id, owner, attempts, error, created_at,
      started_at, updated_at, finished_at""";

  /**
   * A new job; its {@code created_at} (the column's default, {@code now()}) is the database's time of the submission's
   * transaction, the one that counted a filter's orders: a filter's batches take no order created later.
   */
  static final String INSERT_JOB = """
      INSERT INTO bulk_jobs (kind, status, client, ids, filter, upper_id, extend_seconds, total)
      VALUES ($1, 'QUEUED', $2, $3, $4, $5, $6, $7)
      RETURNING """ + " " + JOB_COLUMNS;

  static final String SELECT_JOB = "SELECT " + JOB_COLUMNS + " FROM bulk_jobs WHERE id = $1";

  /** Jobs below id {@code $1}, newest first, {@code $2} of them: the primary key's index read backwards. */
  static final String JOBS_PAGE = "SELECT " + JOB_COLUMNS + " FROM bulk_jobs WHERE id < $1 ORDER BY id DESC LIMIT $2";

  /** Unfinished jobs claimed {@code $1} times already whose lease ran out: their nodes kept stopping mid-run. */
  static final String FAIL_EXHAUSTED_JOBS = """
      UPDATE bulk_jobs SET status = 'FAILED', failed = greatest(0, total - done), owner = NULL, finished_at = now(),
        updated_at = now(),
        error = 'interrupted ' || attempts || ' times (the nodes running it stopped or lost it); ' || done || ' of '
                || total || ' orders were processed and stay so'
      WHERE status IN ('QUEUED', 'RUNNING') AND attempts >= $1 AND (lease_until IS NULL OR lease_until < now())
      RETURNING id""";

  /** Claims the oldest unfinished job nobody holds (its lease free or run out) for {@code $1}, for {@code $2} ms. */
  static final String CLAIM_JOB = """
      UPDATE bulk_jobs SET owner = $1, lease_until = now() + $2::bigint * interval '1 millisecond', attempts = attempts + 1,
        status = 'RUNNING', started_at = coalesce(started_at, now()), updated_at = now()
      WHERE id = (SELECT id FROM bulk_jobs WHERE status IN ('QUEUED', 'RUNNING') AND (lease_until IS NULL OR lease_until < now())
                  ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING """ + " " + JOB_COLUMNS;

  /**
   * The fence of a batch: the job's row, locked for the batch's transaction, if {@code $2} still holds it. A node
   * claiming the job meanwhile waits for the batch to commit, and then finds the lease renewed.
   */
  static final String LOCK_HELD_JOB = """
      SELECT last_id FROM bulk_jobs WHERE id = $1 AND owner = $2 AND status = 'RUNNING' FOR UPDATE""";

  /** A batch's progress, committed with its orders: up to id {@code $2}, {@code $3} changed, {@code $4} skipped. */
  static final String RECORD_BATCH = """
      UPDATE bulk_jobs SET last_id = $2, done = done + $3 + $4, changed = changed + $3, skipped = skipped + $4,
        lease_until = now() + $5::bigint * interval '1 millisecond', updated_at = now()
      WHERE id = $1""";

  static final String FINISH_JOB = """
      UPDATE bulk_jobs SET status = 'SUCCEEDED', owner = NULL, lease_until = NULL, finished_at = now(), updated_at = now()
      WHERE id = $1 AND owner = $2 AND status = 'RUNNING'""";

  static final String FAIL_JOB = """
      UPDATE bulk_jobs SET status = 'FAILED', failed = greatest(0, total - done), error = $3, owner = NULL,
        lease_until = NULL, finished_at = now(), updated_at = now()
      WHERE id = $1 AND owner = $2 AND status = 'RUNNING'""";

  /** A stopping node gives its job back at once: any node (itself restarted) may go on with it. */
  static final String RELEASE_JOB = """
      UPDATE bulk_jobs SET lease_until = now(), updated_at = now() WHERE id = $1 AND owner = $2 AND status = 'RUNNING'""";

  /**
   * Bulk-extend's per-order action ({@link DeadlineExtension}): moves the deadline of the orders {@code $1} that are
   * UNPAID and not due yet to {@code $2} seconds past the time each would close now, the later of its deadline and the
   * hold of a started payment, as {@link #MOVE_DEADLINE_IF_UNCHANGED} moves one for the single extend: the reminder
   * with it (sent again when its new time is still to come), the hold ended (the new deadline is past it), a log line
   * and an ORDER_DEADLINE_EXTENDED event each. Not due as the single extend decides it ({@link #LOCK_ORDER}): past
   * neither the deadline nor the hold; and, as there, the new deadline at most {@code $3} seconds after the order's
   * creation (an admin's ceiling there, {@code orders.maxTimeoutSeconds}). {@code locked} reads and locks the orders
   * it moves, for their deadline before the move ({@code previousCloseAt}), which RETURNING no longer has once a hold
   * was the base; the UPDATE takes its ids from it (an InitPlan, not a join), so that it runs first. Answers each
   * moved order's due time, its new deadline, for its timer.
   */
  static final String EXTEND_DEADLINES_BY_SECONDS = """
      WITH locked AS MATERIALIZED (
        SELECT id, close_at FROM orders
        WHERE id = ANY($1) AND status IS NOT DISTINCT FROM 'UNPAID' AND greatest(close_at, hold_until) > now()
          AND greatest(close_at, hold_until) + $2::int * interval '1 second'
            <= created_at + $3::int * interval '1 second'
        FOR UPDATE),
      moved AS (
        UPDATE orders SET close_at = greatest(close_at, hold_until) + $2::int * interval '1 second',
               remind_at = remind_at + (greatest(close_at, hold_until) - close_at) + $2::int * interval '1 second',
               reminded_at = CASE
                 WHEN remind_at + (greatest(close_at, hold_until) - close_at) + $2::int * interval '1 second' > now()
                 THEN NULL ELSE reminded_at END,
               hold_until = NULL
        WHERE id = ANY($1) AND id = ANY(ARRAY(SELECT id FROM locked)) AND status IS NOT DISTINCT FROM 'UNPAID'
        RETURNING *),
      extended AS (
        SELECT m.*, l.close_at AS previous_close_at FROM moved m JOIN locked l ON l.id = m.id),
      {items},
      logged AS (
        INSERT INTO order_log (order_id, event, detail, at)
        SELECT id, 'EXTENDED', 'from ' || previous_close_at, now() FROM extended),
      evented AS (
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT o.id, o.client, 'ORDER_DEADLINE_EXTENDED', %s || jsonb_build_object('previousCloseAt', {previous}), now()
        FROM extended o LEFT JOIN items it ON it.order_id = o.id)
      SELECT id, close_at AS due_at, CASE WHEN reminded_at IS NULL THEN remind_at END AS remind_at
      FROM moved"""
      .formatted(eventPayload("o", "it.json")).replace("{items}", ITEMS_OF_ORDERS_1)
      .replace("{previous}", utc("o.previous_close_at"));

  // ---- inventory: stock levels and the admins' changes, each logged by the statement that makes it (InventoryStore)

  /**
   * A SKU's stock (view stock: {@code available} with what closes gave back, V24; {@code reserved} less what pays sold
   * and closes gave back, V23 and V24) and its version: the inventory row's {@code xmin}, the id of the transaction
   * that wrote this version of the row, and the units closes gave back. Every write of the row (a reservation, a
   * repair, an admin's change) gives it a new {@code xmin}, every close more units given back, so the version moves
   * with no write of its own on those paths. A pay changes neither: it leaves the version.
   */
  static final String SELECT_INVENTORY = "SELECT sku, available, reserved, version FROM stock WHERE sku = $1";

  /** The version of inventory row {@code inv}'s stock, as view stock writes it (V24). */
  private static final String VERSION_OF_ROW = "inv.xmin::text || '-' || units_released(inv.sku)";

  /** The stock of inventory row {@code inv} that a statement changed, as view stock shows it. */
  private static final String STOCK_OF_ROW = "inv.sku, inv.available + units_released(inv.sku) AS available, "
      + "inv.reserved - units_paid(inv.sku) - units_released(inv.sku) AS reserved, " + VERSION_OF_ROW + " AS version";

  /** A new SKU with {@code $2} available, logged as the admin client {@code $3}'s; no row when the SKU has one already. */
  static final String CREATE_INVENTORY = """
      WITH created AS (
        INSERT INTO inventory AS inv (sku, available) VALUES ($1, $2) ON CONFLICT (sku) DO NOTHING
        RETURNING {stock}),
      logged AS (
        INSERT INTO inventory_log (sku, client, operation, available_after, delta)
        SELECT sku, $3, 'SET', available, available FROM created)
      SELECT sku, available, reserved, version FROM created""".replace("{stock}", STOCK_OF_ROW);

  /**
   * Sets {@code available} to {@code $2} if the row's version is one of {@code $3} (null: whatever it is), logged as
   * the admin client {@code $4}'s; no row otherwise. A version that another transaction is replacing is waited for
   * and then compared with the row it committed, so a change that commits meanwhile is never overwritten.
   */
  static final String SET_AVAILABLE_IF_VERSION = """
      WITH was AS (
        SELECT inv.sku, inv.available + units_released(inv.sku) AS available, units_released(inv.sku) AS released
        FROM inventory AS inv WHERE inv.sku = $1 AND ($3::text[] IS NULL OR {version} = ANY($3)) FOR UPDATE),
      changed AS (
        UPDATE inventory AS inv SET available = $2 - was.released, updated_at = now()
        FROM was WHERE inv.sku = was.sku
        RETURNING was.available AS available_before, {stock}),
      logged AS (
        INSERT INTO inventory_log (sku, client, operation, available_before, available_after, delta)
        SELECT sku, $4, 'SET', available_before, available, available - available_before FROM changed)
      SELECT sku, available, reserved, version FROM changed""".replace("{stock}", STOCK_OF_ROW)
      .replace("{version}", VERSION_OF_ROW);

  /**
   * Adds {@code $2} (negative: takes away) to {@code available} in one update, so concurrent changes all count,
   * logged as the admin client {@code $4}'s; no row when there is no such SKU or the result would be below zero or,
   * for an increase, above {@code $3}.
   */
  static final String ADJUST_AVAILABLE = """
      WITH changed AS (
        UPDATE inventory AS inv SET available = available + $2, updated_at = now()
        WHERE sku = $1 AND available + units_released(sku) + $2 >= 0
          AND ($2 < 0 OR available + units_released(sku) + $2 <= $3)
        RETURNING {stock}),
      logged AS (
        INSERT INTO inventory_log (sku, client, operation, available_before, available_after, delta)
        SELECT sku, $4, 'ADJUST', available - $2, available, $2 FROM changed)
      SELECT sku, available, reserved, version FROM changed""".replace("{stock}", STOCK_OF_ROW);

  /**
   * A SKU's latest {@code $2} admin changes, newest first; one row with a null id when it has none (a SKU set before
   * the log existed), none when there is no such SKU.
   */
  static final String INVENTORY_LOG = """
      SELECT l.id, l.client, l.operation, l.available_before, l.available_after, l.delta, l.at
      FROM inventory inv LEFT JOIN LATERAL (
        SELECT * FROM inventory_log WHERE sku = inv.sku ORDER BY id DESC LIMIT $2) AS l ON true
      WHERE inv.sku = $1
      ORDER BY l.id DESC""";

  // ---- reconciliation: the stock invariant and overdue orders (MaintenanceStore)

  /** The check's transaction, its first statement: one snapshot for all its statements, and no writes. */
  static final String READ_ONLY_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

  /** The database clock at the check (its transaction's start), and how many SKUs it covers. */
  static final String COUNT_INVENTORY = "SELECT now() AS checked_at, count(*) AS skus FROM inventory";

  /**
   * SKUs whose {@code reserved} is not the sum of the quantities of their items in unpaid orders, in
   * SKU order, the first {@code $1} of them, each with the total number that differ. One statement:
   * one snapshot, so closes and creates committing meanwhile cannot make a difference appear.
   */
  static final String RESERVED_DIFFERENCES = """
      WITH expected AS (
        SELECT i.sku, sum(i.qty) AS qty FROM order_items i JOIN orders o ON o.id = i.order_id
        WHERE o.status = 'UNPAID' GROUP BY i.sku),
      differing AS (
        SELECT s.sku, s.reserved, coalesce(e.qty, 0)::bigint AS expected
        FROM stock s LEFT JOIN expected e ON e.sku = s.sku
        WHERE s.reserved <> coalesce(e.qty, 0))
      SELECT sku, reserved, expected, count(*) OVER () AS total FROM differing ORDER BY sku LIMIT $1""";

  /**
   * The clients whose holdings (client_holdings, summed over stripes) are not what their unpaid orders hold, in
   * client order: the counted and the true figures of each, with the total number that differ. One snapshot.
   */
  static final String CLIENT_HOLDINGS_DIFFERENCES = clientHoldingsDifferences(
      "SELECT client, unpaid, units, expected_unpaid, expected_units, count(*) OVER () AS total FROM differing ORDER BY client LIMIT $1");

  /**
   * One repair of the clients' holdings at a time in the whole cluster, until its transaction ends; the key is
   * arbitrary but fixed. Taken in an earlier statement, so that {@link #REPAIR_CLIENT_HOLDINGS}'s snapshot comes after
   * the previous repair's commit.
   */
  static final String LOCK_HOLDINGS_REPAIR = "SELECT pg_advisory_xact_lock(6613870258)";

  /**
   * The repair of client_holdings: each differing client's stripe 0 gets the difference added, in client order. It
   * is computed in the statement's one snapshot, and every transaction that commits after it changes the orders and
   * the counts alike, so the counts come out right however many creates, pays and closes run meanwhile.
   */
  static final String REPAIR_CLIENT_HOLDINGS = clientHoldingsDifferences("""
      INSERT INTO client_holdings AS h (client, stripe, unpaid, units)
      SELECT client, 0, expected_unpaid - unpaid, expected_units - units FROM differing ORDER BY client
      ON CONFLICT (client, stripe) DO UPDATE SET unpaid = h.unpaid + EXCLUDED.unpaid, units = h.units + EXCLUDED.units
      RETURNING h.client""");

  private static String clientHoldingsDifferences(String statement) {
    return """
        WITH per_order AS (
          SELECT o.client, coalesce(sum(i.qty), 0) AS units
          FROM orders o LEFT JOIN order_items i ON i.order_id = o.id
          WHERE o.status = 'UNPAID' GROUP BY o.id, o.client),
        expected AS (SELECT client, count(*) AS unpaid, sum(units) AS units FROM per_order GROUP BY client),
        counted AS (SELECT client, sum(unpaid) AS unpaid, sum(units) AS units FROM client_holdings GROUP BY client),
        differing AS (
          SELECT coalesce(e.client, c.client) AS client,
                 coalesce(c.unpaid, 0)::bigint AS unpaid, coalesce(c.units, 0)::bigint AS units,
                 coalesce(e.unpaid, 0)::bigint AS expected_unpaid, coalesce(e.units, 0)::bigint AS expected_units
          FROM expected e FULL JOIN counted c ON c.client = e.client
          WHERE coalesce(e.unpaid, 0) <> coalesce(c.unpaid, 0) OR coalesce(e.units, 0) <> coalesce(c.units, 0))
        %s""".formatted(statement);
  }

  /** Unpaid orders overdue by more than {@code $1} seconds: how many, and the oldest (by deadline). */
  static final String OVERDUE_UNPAID = """
      SELECT id, close_at, count(*) OVER () AS total FROM orders
      WHERE status = 'UNPAID' AND close_at < now() - $1::int * interval '1 second'
        AND (hold_until IS NULL OR hold_until < now() - $1::int * interval '1 second')
      ORDER BY close_at, id LIMIT 1""";

  /**
   * The repair of {@code reserved} (as view stock shows it) for the SKUs in {@code $1}, whose rows the transaction
   * has locked in SKU order ({@link #LOCK_STOCK_BY_SKU}) first: the sum is recomputed under the locks, so no create of
   * those SKUs can commit in between. A pay or a close can (they do not lock the row), but each changes its orders and
   * its stripe (of inventory_paid, of inventory_released) in one transaction, and the statement reads both in its one
   * snapshot. {@code available} is left alone.
   */
  static final String REPAIR_RESERVED = """
      WITH expected AS (
        SELECT i.sku, sum(i.qty) AS qty FROM order_items i JOIN orders o ON o.id = i.order_id
        WHERE o.status = 'UNPAID' AND i.sku = ANY($1) GROUP BY i.sku),
      target AS (
        SELECT s.sku, s.reserved AS was, coalesce(e.qty, 0)::bigint AS expected
        FROM stock s LEFT JOIN expected e ON e.sku = s.sku
        WHERE s.sku = ANY($1))
      UPDATE inventory AS inv
      SET reserved = t.expected + units_paid(inv.sku) + units_released(inv.sku), updated_at = now()
      FROM target t
      WHERE inv.sku = t.sku AND t.was <> t.expected
      RETURNING inv.sku, t.was, t.expected AS reserved""";

  // ---- reconciliation runs and their reports (ReconciliationRuns)

  /**
   * The latest slot whose scheduled run counts as run, and whether that run is still running; no row when none. A run
   * counts when it finished (with a report or failed) or started at most {@code $1} seconds ago; one that never
   * finished and started longer ago (its node died in the middle) does not: {@link #CLAIM_RECONCILIATION_SLOT} takes
   * it over.
   */
  static final String LAST_RECONCILIATION_SLOT = """
      SELECT slot, finished_at IS NULL AS running FROM reconciliation_runs
      WHERE slot IS NOT NULL AND (finished_at IS NOT NULL OR started_at >= now() - $1::int * interval '1 second')
      ORDER BY slot DESC LIMIT 1""";

  /**
   * Claims slot {@code $1} for node {@code $2}: a new row, or the row of a run of that slot that never finished and
   * started more than {@code $3} seconds ago (its node died in the middle). No row back when another node has it.
   */
  static final String CLAIM_RECONCILIATION_SLOT = """
      INSERT INTO reconciliation_runs AS r (slot, trigger, node_id, repair, started_at)
      VALUES ($1, 'SCHEDULE', $2, false, now())
      ON CONFLICT (slot) DO UPDATE SET node_id = EXCLUDED.node_id, started_at = now()
        WHERE r.finished_at IS NULL AND r.started_at < now() - $3::int * interval '1 second'
      RETURNING r.id""";

  static final String START_REQUESTED_RECONCILIATION = """
      INSERT INTO reconciliation_runs (trigger, node_id, repair, started_at) VALUES ('REQUEST', $1, $2, now()) RETURNING id""";

  /** Run {@code $1} finished with report {@code $2} (null when it failed) or error {@code $3}. */
  static final String FINISH_RECONCILIATION = """
      UPDATE reconciliation_runs SET finished_at = now(), report = $2::text::jsonb, error = $3 WHERE id = $1""";

  /** The latest run that finished with a report. */
  static final String LATEST_RECONCILIATION = """
      SELECT id, slot, trigger, node_id, repair, started_at, finished_at, report::text AS report FROM reconciliation_runs
      WHERE finished_at IS NOT NULL AND report IS NOT NULL
      ORDER BY finished_at DESC, id DESC LIMIT 1""";

  // ---- retention: small batches, each its own short transaction (MaintenanceStore)

  /*
   * Each pass reads a bounded head of its table, oldest first, by an index in time order, whatever the table's size:
   * the log lines and the events by id (written in time order), the keys by their time. A BRIN index of their time,
   * used before, never narrows a range whose rows were deleted, so once freed pages took new rows every range matched
   * and every pass read the whole table (decision 0045).
   */

  /** Within a delete of events: the highest feed position it deleted of each client, kept for the feed's readers. */
  private static final String NOTE_FEED_DELETED = """
      INSERT INTO outbox_feed_deleted AS d (client, through)
        SELECT coalesce(u.client, ''), max(u.position) FROM unfed u GROUP BY 1 ORDER BY 1
        ON CONFLICT (client) DO UPDATE SET through = greatest(d.through, EXCLUDED.through)""";

  /** Log lines older than {@code $1} hours among the {@code $2} first by id. */
  static final String DELETE_OLD_ORDER_LOG = """
      DELETE FROM order_log WHERE id IN (
        SELECT id FROM (SELECT id, at FROM order_log ORDER BY id LIMIT $2) AS first
        WHERE at < now() - $1::int * interval '1 hour')""";

  /**
   * Events older than {@code $1} hours that every sink wanting them has: a feed position given (so their webhook
   * deliveries exist), published to Kafka when the relay runs ({@code $3}), and no delivery of theirs pending or failed.
   * It looks at the {@code $2} events after id {@code $4} and answers how far it looked ({@code up_to}: the last one
   * before the first not old enough) and whether more may follow. The caller starts its next look there, so that
   * events some sink does not have (a webhook failing, or no longer configured) are not read again every pass; they
   * go at the maximum age ({@link #DELETE_EXPIRED_EVENTS}). A mark above every event id the identity has given (a
   * database restored or re-created under a running node) starts from the first again. Their positions go with them,
   * their deliveries too (ON DELETE CASCADE). Each event's position is looked up by key in a subquery (no position:
   * null, and the event stays).
   */
  static final String DELETE_DELIVERED_EVENTS = """
      WITH head AS (
        SELECT o.event_id, o.created_at < now() - $1::int * interval '1 hour' AS old
        FROM outbox o
        WHERE o.event_id > (SELECT CASE WHEN $4::bigint > coalesce(pg_sequence_last_value(
                                             pg_get_serial_sequence('outbox', 'event_id')::regclass), 0)
                                        THEN 0 ELSE $4::bigint END)
        ORDER BY o.event_id LIMIT $2::int),
      looked AS (
        SELECT coalesce((SELECT min(event_id) - 1 FROM head WHERE NOT old), (SELECT max(event_id) FROM head),
                        $4::bigint) AS up_to,
               (SELECT count(*) FROM head) = $2::int AND coalesce((SELECT bool_and(old) FROM head), false) AS more),
      doomed AS (
        SELECT h.event_id FROM head h
        WHERE h.event_id <= (SELECT up_to FROM looked)
          AND (SELECT NOT $3::boolean OR f.position <= (SELECT last_position FROM outbox_relayed)
               FROM outbox_feed f WHERE f.event_id = h.event_id)
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                          WHERE d.event_id = h.event_id AND d.status <> 'DELIVERED')),
      unfed AS (
        DELETE FROM outbox_feed WHERE event_id = ANY (ARRAY(SELECT event_id FROM doomed)) RETURNING client, position),
      noted AS (%s),
      gone AS (
        DELETE FROM outbox WHERE event_id = ANY (ARRAY(SELECT event_id FROM doomed)) RETURNING 1)
      SELECT (SELECT count(*) FROM gone) AS deleted, up_to, more FROM looked""".formatted(NOTE_FEED_DELETED);

  /**
   * Events older than {@code $1} days among the {@code $2} first by id, delivered or not: how many went, and how many
   * of them some sink did not have ({@code $3}: the Kafka relay runs).
   */
  static final String DELETE_EXPIRED_EVENTS = """
      WITH doomed AS (
        SELECT o.event_id,
               (coalesce((SELECT $3::boolean AND f.position > (SELECT last_position FROM outbox_relayed)
                          FROM outbox_feed f WHERE f.event_id = o.event_id), true)
                OR EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = o.event_id AND d.status <> 'DELIVERED'))
                 AS undelivered
        FROM (SELECT event_id, created_at FROM outbox ORDER BY event_id LIMIT $2) AS o
        WHERE o.created_at < now() - $1::int * interval '1 day'),
      gone AS (
        DELETE FROM outbox o USING doomed WHERE o.event_id = doomed.event_id RETURNING doomed.undelivered),
      unqueued AS (
        DELETE FROM outbox_pending q USING doomed WHERE q.event_id = doomed.event_id),
      unfed AS (
        DELETE FROM outbox_feed f USING doomed WHERE f.event_id = doomed.event_id RETURNING f.client, f.position),
      noted AS (%s)
      SELECT count(*) AS deleted, count(*) FILTER (WHERE undelivered) AS undelivered FROM gone""".formatted(
      NOTE_FEED_DELETED);

  /** Bulk jobs finished more than {@code $1} days ago, {@code $2} at most (operators' pace: a few a day). */
  static final String DELETE_OLD_BULK_JOBS = """
      DELETE FROM bulk_jobs WHERE id IN (
        SELECT id FROM bulk_jobs WHERE finished_at < now() - $1::int * interval '1 day' ORDER BY id LIMIT $2)""";

  /**
   * Reconciliation runs started more than {@code $1} days ago, {@code $2} at most, but never the latest finished with a
   * report ({@code GET /v1/admin/reconciliation/latest} answers it).
   */
  static final String DELETE_OLD_RECONCILIATION_RUNS = """
      DELETE FROM reconciliation_runs WHERE id IN (
        SELECT id FROM reconciliation_runs WHERE started_at < now() - $1::int * interval '1 day'
          AND id IS DISTINCT FROM (SELECT id FROM reconciliation_runs
                                   WHERE finished_at IS NOT NULL AND report IS NOT NULL
                                   ORDER BY finished_at DESC, id DESC LIMIT 1)
        ORDER BY id LIMIT $2)""";

  /** Idempotency keys older than {@code $1} hours, the oldest {@code $2}: a replay after that creates a new order. */
  static final String DELETE_OLD_IDEMPOTENCY_KEYS = """
      DELETE FROM idempotency_keys WHERE (client, key) IN (
        SELECT client, key FROM idempotency_keys WHERE created_at < now() - $1::int * interval '1 hour'
        ORDER BY created_at LIMIT $2)""";

  // ---- outbox relay

  /**
   * How far the relay has published, locked for this relay's transaction; while another relay holds it, no row: one
   * relay at a time, so events go out in feed order and none is sent by two relays.
   */
  /** The relay's mark, locked (no row while another relay holds it), and the transaction's idle timeout {@code $1}. */
  static final String LOCK_RELAY_MARK = """
      SELECT last_position, set_config('idle_in_transaction_session_timeout', $1, true)
      FROM outbox_relayed FOR UPDATE SKIP LOCKED""";

  /**
   * The next events to publish, in feed order (commit order, see {@link #DISPATCH_EVENTS}): only events the dispatcher
   * has positioned, so that an order's later event never goes before its earlier one. Each event is looked up by key
   * ({@code LIMIT 1} keeps the planner from making that a join over the outbox).
   */
  static final String EVENTS_AFTER_POSITION = """
      SELECT f.event_id, o.order_id, o.type, o.payload::text AS payload, f.position FROM outbox_feed f
      CROSS JOIN LATERAL (SELECT order_id, type, payload FROM outbox WHERE event_id = f.event_id LIMIT 1) o
      WHERE f.position > $1 ORDER BY f.position LIMIT $2""";

  static final String MOVE_RELAY_MARK = "UPDATE outbox_relayed SET last_position = $1";

  // ---- events out without Kafka: feed positions, webhook deliveries, the pull feed (EventStore)

  /**
   * One dispatcher at a time in the whole cluster; the key is arbitrary but fixed. Held until the transaction ends.
   * Also whether any event waits: with none, {@link #DISPATCH_EVENTS} is not sent. When it was planned on every call
   * over the partitions of orders (about 1 ms), ten times a second it was half of what an idle node's PostgreSQL spent.
   */
  static final String TRY_DISPATCH_LOCK =
      "SELECT pg_try_advisory_xact_lock(8245934571) AS locked, EXISTS (SELECT 1 FROM outbox_pending) AS pending";

  /**
   * Under {@link #TRY_DISPATCH_LOCK}, taken in an earlier statement of the same transaction: this statement's snapshot
   * sees everything the previous dispatcher committed. Takes the first {@code $1} committed events of outbox_pending
   * off it and gives those still without a position the next positions in event id order (one order's events were
   * written in that order: each waited for the row lock of the previous), in outbox_feed, and adds a delivery per event
   * and webhook that wants it: {@code $2} urls, {@code $3} their types (comma-separated, empty for all), {@code $4}
   * their client (empty for any; with no webhook the deliveries' joins are not run at all, rather than looking up each
   * event's order for none). Returns how many it took off the queue, and how many of them it positioned: an event
   * already positioned (queued again by hand after a restore) or deleted only leaves it. Each taken event and its
   * position are looked up by key in subqueries, which the planner never turns into joins: as a join, planned on the
   * outbox's statistics of an hour ago, it read the whole outbox. Runs on the session's plan made once
   * ({@link #PLAN_ONCE_PER_SESSION}, decision 0038): planned for its parameters, the webhooks' join over the partitions
   * of orders took 1.2 ms of planning a call.
   */
  static final String DISPATCH_EVENTS = """
      WITH taken AS (
        DELETE FROM outbox_pending
        WHERE event_id = ANY (ARRAY(SELECT event_id FROM outbox_pending ORDER BY event_id LIMIT $1))
        RETURNING event_id),
      next AS (
        SELECT e.event_id, e.order_id, e.type, e.client, row_number() OVER (ORDER BY e.event_id) AS rn
        FROM taken t
        CROSS JOIN LATERAL (SELECT event_id, order_id, type, client FROM outbox WHERE event_id = t.event_id LIMIT 1) e
        WHERE (SELECT true FROM outbox_feed f WHERE f.event_id = t.event_id) IS NULL),
      counter AS (
        UPDATE outbox_positions SET last_position = last_position + (SELECT count(*) FROM next)
        RETURNING last_position - (SELECT count(*) FROM next) AS base),
      positioned AS (
        INSERT INTO outbox_feed (event_id, position, client)
        SELECT next.event_id, counter.base + next.rn, next.client FROM next, counter
        RETURNING event_id, position),
      delivering AS (
        INSERT INTO webhook_deliveries (event_id, position, order_id, shard, sink)
        SELECT n.event_id, p.position, n.order_id, coalesce(ord.shard, 0), s.sink
        FROM positioned p
        JOIN next n ON n.event_id = p.event_id
        LEFT JOIN orders ord ON ord.id = n.order_id
        JOIN unnest($2::text[], $3::text[], $4::text[]) AS s (sink, types, client)
          ON (s.types = '' OR n.type = ANY(string_to_array(s.types, ','))) AND (s.client = '' OR s.client = n.client)
        WHERE cardinality($2::text[]) > 0)
      SELECT (SELECT count(*) FROM taken) AS taken, (SELECT count(*) FROM positioned) AS positioned""";

  /**
   * The dead rows {@link #DISPATCH_EVENTS} left in the queue, and their index entries, gone (outside a transaction).
   * Skipped while another vacuum holds the table, rather than waited for; the file keeps its empty pages (giving them
   * back waits for a moment without writers: 161 ms a vacuum in the steady-state benchmark, 1.3 ms without).
   */
  static final String VACUUM_DISPATCH_QUEUE = "VACUUM (SKIP_LOCKED, TRUNCATE false) outbox_pending";

  /**
   * Deliveries to send now, of the shards {@code $1}, not among {@code $2} (in flight here), to each webhook of
   * {@code $4} (those configured here) as many as {@code $3} gives it room for; a delivery waits while an earlier event
   * of its order to the same sink is pending. Each webhook's pending deliveries are walked in position order
   * (webhook_deliveries_pending_by_position, V32, whose {@code position > 0} only the walk says) from after its cursor
   * {@code $5}, and at most {@code $6} of them are looked at, however many are not due, of other shards or waiting for
   * their order (decision 0047). Each row says how far down the walk it was ({@code looked}) and whether it is to be
   * sent ({@code due}); the first and the {@code $6}th row looked at come back either way, to move the cursor, and a
   * webhook may get one due row more than its room, which the caller leaves. Each webhook has its own room, so a slow
   * one holds back only its own deliveries; and one no longer configured keeps its deliveries pending, taking none.
   * {@code OFFSET 0} keeps {@code due} computed once a row: the subquery merged into the filter would run its NOT
   * EXISTS again there.
   */
  static final String DUE_DELIVERIES = """
      SELECT d.id, d.event_id, d.sink, d.attempts, d.position, d.looked, d.due, o.type, o.order_id, o.created_at,
             o.payload::text AS payload
      FROM unnest($4::text[], $3::int[], $5::bigint[]) AS s (sink, room, after)
      CROSS JOIN LATERAL (
        SELECT * FROM (
          SELECT w.id, w.event_id, w.sink, w.attempts, w.position, w.looked,
                 w.shard = ANY($1::int[]) AND w.next_attempt_at <= now() AND NOT (w.id = ANY($2::bigint[]))
                   AND NOT EXISTS (
                     SELECT 1 FROM webhook_deliveries e
                     WHERE e.sink = w.sink AND e.order_id = w.order_id AND e.status = 'PENDING'
                       AND e.position < w.position) AS due
          FROM (
            SELECT d.id, d.event_id, d.sink, d.attempts, d.position, d.shard, d.next_attempt_at, d.order_id,
                   row_number() OVER (ORDER BY d.position) AS looked
            FROM webhook_deliveries d
            WHERE d.sink = s.sink AND d.status = 'PENDING' AND d.position > 0 AND d.position > s.after
            ORDER BY d.position LIMIT $6::int) w
          ORDER BY w.position OFFSET 0) v
        WHERE v.due OR v.looked = 1 OR v.looked = $6::int
        ORDER BY v.position LIMIT s.room + 1) d
      LEFT JOIN outbox o ON d.due AND o.event_id = d.event_id
      ORDER BY d.position""";

  /** The deliveries {@code $1} answered 2xx, in one statement. */
  static final String DELIVERED = """
      UPDATE webhook_deliveries
      SET status = 'DELIVERED', attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, now()),
          delivered_at = now(), last_error = NULL
      WHERE id = ANY($1) AND status = 'PENDING'""";

  /**
   * A failed attempt: {@code $2} the error, tried again in {@code $3} ms, or marked FAILED when the first attempt is
   * {@code $4} seconds old or more.
   */
  static final String DELIVERY_FAILED = """
      UPDATE webhook_deliveries
      SET attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, now()), last_error = $2,
          next_attempt_at = now() + $3::bigint * interval '1 millisecond',
          status = CASE WHEN coalesce(first_attempt_at, now()) <= now() - $4::int * interval '1 second'
                        THEN 'FAILED' ELSE 'PENDING' END
      WHERE id = $1 AND status = 'PENDING'
      RETURNING status""";

  /** Deliveries of status {@code $1} (any when null) with an id above {@code $2}, {@code $3} at most, by id. */
  static final String LIST_DELIVERIES = """
      SELECT d.id, d.event_id, d.order_id, o.type, d.sink, d.status, d.attempts, d.first_attempt_at, d.next_attempt_at,
             d.last_error, d.delivered_at
      FROM webhook_deliveries d JOIN outbox o ON o.event_id = d.event_id
      WHERE ($1::text IS NULL OR d.status = $1) AND d.id > $2
      ORDER BY d.id LIMIT $3""";

  /** A failed delivery goes back to pending, due now, with a new retry period. */
  static final String RETRY_DELIVERY = """
      UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at = now(), first_attempt_at = NULL
      WHERE id = $1 AND status = 'FAILED'
      RETURNING id""";

  static final String DELIVERY_STATUS = "SELECT status FROM webhook_deliveries WHERE id = $1";

  static final String LAST_FEED_POSITION = "SELECT last_position FROM outbox_positions";

  /**
   * The feed for admins: events with a position above {@code $1}, {@code $2} at most, in position order (each event
   * looked up by key, as in {@link #EVENTS_AFTER_POSITION}), each row with {@code deleted_through}, the highest
   * position retention deleted of any client's events (0 when none, or when {@code $1} is 0); no events, one row of
   * that alone. Both in one statement, so in one snapshot: a page that starts after positions a retention delete took
   * also sees the mark that delete wrote with them (decision 0046).
   */
  static final String FEED_PAGE = """
      SELECT d.through AS deleted_through, p.* FROM
        (SELECT coalesce(max(through), 0) AS through FROM outbox_feed_deleted WHERE $1::bigint > 0) d
      LEFT JOIN (
        SELECT f.event_id, o.type, o.order_id, o.created_at, o.payload::text AS payload, f.position FROM outbox_feed f
        CROSS JOIN LATERAL (
          SELECT type, order_id, created_at, payload FROM outbox WHERE event_id = f.event_id LIMIT 1) o
        WHERE f.position > $1 ORDER BY f.position LIMIT $2) p ON true
      ORDER BY p.position""";

  /** {@link #FEED_PAGE} of client {@code $3}'s orders (outbox_feed_by_client), with that client's deleted mark. */
  static final String FEED_PAGE_OF_CLIENT = """
      SELECT d.through AS deleted_through, p.* FROM
        (SELECT coalesce(max(through), 0) AS through FROM outbox_feed_deleted WHERE $1::bigint > 0 AND client = $3) d
      LEFT JOIN (
        SELECT f.event_id, o.type, o.order_id, o.created_at, o.payload::text AS payload, f.position FROM outbox_feed f
        CROSS JOIN LATERAL (
          SELECT type, order_id, created_at, payload FROM outbox WHERE event_id = f.event_id LIMIT 1) o
        WHERE f.client = $3 AND f.position > $1 ORDER BY f.position LIMIT $2) p ON true
      ORDER BY p.position""";

  // ---- health checks and gauges

  static final String PING = "SELECT 1";

  /** The drain's last resort: cancels what this node's sessions ({@code $1} their application_name) are running. */
  static final String CANCEL_STATEMENTS_OF = """
      SELECT pg_cancel_backend(pid) FROM pg_stat_activity
      WHERE application_name = $1 AND state = 'active' AND pid <> pg_backend_pid()""";

  /** Flyway's record of the versioned migrations it ran (repeatable ones have no version). */
  static final String APPLIED_MIGRATIONS = "SELECT version, success FROM flyway_schema_history WHERE version IS NOT NULL";

  /**
   * The outbox rows no relay has published yet (not positioned, or past the relay's mark), up to
   * {@link OpsStore#OUTBOX_BACKLOG_COUNTED_UP_TO}, and the age in seconds of the oldest (null when none): the older of the
   * first queued event (one deleted while queued skipped: its event is looked up by key, a LIMIT keeping the planner
   * from making that a join) and the first row past the mark, each from the start of its index. Counting every row
   * took longer than the health pool's statement timeout in a storm of a million closes with Kafka off (nothing
   * publishes then): the read failed every 5 s, each time after seconds of a PostgreSQL core the closes needed.
   */
  static final String OUTBOX_BACKLOG = """
      WITH mark AS (SELECT last_position FROM outbox_relayed)
      SELECT least(%1$d,
               (SELECT count(*) FROM (SELECT FROM outbox_pending ORDER BY event_id LIMIT %1$d) queued)
               + (SELECT count(*) FROM (SELECT FROM outbox_feed, mark WHERE position > mark.last_position LIMIT %1$d) fed)),
             (SELECT extract(epoch from now() - min(created_at)) FROM (
                (SELECT o.created_at FROM outbox_pending p
                 CROSS JOIN LATERAL (SELECT created_at FROM outbox WHERE event_id = p.event_id LIMIT 1) o
                 ORDER BY p.event_id LIMIT 1)
                UNION ALL
                (SELECT o.created_at FROM outbox_feed f
                 CROSS JOIN LATERAL (SELECT created_at FROM outbox WHERE event_id = f.event_id LIMIT 1) o
                 WHERE f.position > (SELECT last_position FROM mark) ORDER BY f.position LIMIT 1)) firsts)"""
      .formatted(OpsStore.OUTBOX_BACKLOG_COUNTED_UP_TO);

  // ---- partitions of orders and order_items (OrderPartitions; identifiers arrive quoted)

  /** The partitions of table {@code $1} with their bounds as PostgreSQL prints them. */
  static final String LIST_PARTITIONS = """
      SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
      WHERE h.inhparent = to_regclass($1)""";

  /** Whether an orders partition holds an unpaid order (its orders_unpaid_by_user index), and any row at all. */
  static String partitionContents(String partition) {
    return "SELECT EXISTS (SELECT 1 FROM " + partition + " WHERE status = 'UNPAID') AS unpaid, "
        + "EXISTS (SELECT 1 FROM " + partition + ") AS any";
  }

  /**
   * The rows of an orders partition and its items' partition (null: none): each read whole, so counted before the
   * transaction that detaches them, never under its lock.
   */
  static String partitionRows(String orders, String items) {
    return "SELECT (SELECT count(*) FROM " + orders + ") AS orders, "
        + (items == null ? "0::bigint" : "(SELECT count(*) FROM " + items + ")") + " AS items";
  }

  /**
   * The checks made again under the detach's lock, each reading an index or next to nothing: whether the detached
   * orders partition holds an unpaid order (by its partial index of unpaid orders), and, for a pair counted empty
   * ({@code countedEmpty}), whether it holds any row now (nothing deletes orders or items, so a table counted empty
   * holds only what was written since).
   */
  static String detachedChecks(String orders, String items, boolean countedEmpty) {
    String written = !countedEmpty ? "false"
        : "EXISTS (SELECT 1 FROM " + orders + ")" + (items == null ? "" : " OR EXISTS (SELECT 1 FROM " + items + ")");
    return "SELECT EXISTS (SELECT 1 FROM " + orders + " WHERE status = 'UNPAID') AS unpaid, " + written + " AS written";
  }

  static String detachPartition(String parent, String partition) {
    return "ALTER TABLE " + parent + " DETACH PARTITION " + partition;
  }

  static String dropTable(String table) {
    return "DROP TABLE " + table;
  }

  static String archivePartition(String table, String archivedName, String schema) {
    return "ALTER TABLE " + table + " RENAME TO " + archivedName + "; ALTER TABLE " + archivedName + " SET SCHEMA " + schema;
  }

  /** A new partition's index of orders_by_created_time gets autosummarize, which its parent cannot hold (V27). */
  static final String SUMMARIZE_ORDER_PARTITIONS_AS_RANGES_FILL = "SELECT summarize_order_partitions_as_ranges_fill()";

  /** IF NOT EXISTS: two nodes without the job's lock (Redis off or down) create the same partitions ahead. */
  static String createPartition(String partition, String parent, long from, long to) {
    return "CREATE TABLE IF NOT EXISTS " + partition + " PARTITION OF " + parent + " FOR VALUES FROM ("
        + (from == Long.MIN_VALUE ? "MINVALUE" : Long.toString(from)) + ") TO (" + to + ")";
  }
}
