package ordertimeout.store;

/**
 * Every SQL statement of the service, named. Parameters are always bound ($n). Statements that touch
 * several inventory rows are preceded by {@link #LOCK_STOCK_OF_ORDERS} or {@link #LOCK_STOCK_BY_SKU},
 * which lock them in SKU order, so that concurrent transactions cannot deadlock on inventory.
 */
final class Sql {
  private Sql() {}

  static final String SELECT_ORDER = """
      SELECT o.id, o.user_id, o.category, o.status, o.close_reason, o.created_at, o.close_at, o.remind_at,
             o.paid_at, o.closed_at,
             array_agg(i.sku ORDER BY i.sku) AS skus, array_agg(i.qty ORDER BY i.sku) AS qtys
      FROM orders o JOIN order_items i ON i.order_id = o.id
      WHERE o.id = $1 AND ($2::text IS NULL OR o.client = $2)
      GROUP BY o.id""";

  // ---- create

  /** Held until commit: a second request with the same idempotency key finds it taken. */
  static final String TRY_LOCK_IDEMPOTENCY_KEY = "SELECT pg_try_advisory_xact_lock($1) AS locked";

  static final String SELECT_IDEMPOTENCY_KEY = """
      SELECT request_hash, response_status, response_body FROM idempotency_keys WHERE client = $1 AND key = $2""";

  /** Serialises one user's creates so that the unpaid-orders cap cannot be raced past. */
  static final String LOCK_USER = "SELECT pg_advisory_xact_lock($1)";

  static final String COUNT_UNPAID_OF_USER =
      "SELECT count(*) AS unpaid FROM orders WHERE client = $1 AND user_id = $2 AND status = 'UNPAID'";

  static final String LOCK_STOCK_BY_SKU = """
      SELECT sku, available FROM inventory WHERE sku = ANY($1) ORDER BY sku FOR UPDATE""";

  static final String RESERVE_STOCK = """
      UPDATE inventory AS inv
      SET available = inv.available - d.qty, reserved = inv.reserved + d.qty, updated_at = now()
      FROM unnest($1::text[], $2::int[]) AS d (sku, qty)
      WHERE inv.sku = d.sku""";

  /**
   * The order, its items, its log line and its ORDER_CREATED event, in one statement. The clock is
   * read here, after the locks were granted, so that lock waits do not eat into the time to pay.
   */
  static final String INSERT_ORDER = """
      WITH created AS (
        INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at, remind_at)
        SELECT $1, $2, $9, $3, $4, 'UNPAID', t.at, t.at + $5::int * interval '1 second', t.at + $6::int * interval '1 second'
        FROM (SELECT clock_timestamp() AS at) AS t
        RETURNING id, user_id, category, created_at, close_at, remind_at),
      items AS (
        INSERT INTO order_items (order_id, sku, qty)
        SELECT $1, d.sku, d.qty FROM unnest($7::text[], $8::int[]) AS d (sku, qty)),
      logged AS (
        INSERT INTO order_log (order_id, event, detail, at)
        SELECT id, 'CREATED', category, created_at FROM created),
      evented AS (
        INSERT INTO outbox (order_id, type, payload, created_at)
        SELECT id, 'ORDER_CREATED',
               jsonb_build_object('orderId', id::text, 'userId', user_id, 'category', category,
                                  'closeAt', close_at, 'remindAt', remind_at,
                                  'items', (SELECT jsonb_agg(jsonb_build_object('sku', d.sku, 'qty', d.qty))
                                            FROM unnest($7::text[], $8::int[]) AS d (sku, qty))),
               created_at
        FROM created)
      SELECT created_at, close_at, remind_at FROM created""";

  static final String INSERT_IDEMPOTENCY_KEY = """
      INSERT INTO idempotency_keys (client, key, request_hash, response_status, response_body, order_id)
      VALUES ($1, $2, $3, $4, $5, $6)""";

  // ---- pay and close

  static final String PAY = """
      WITH paid AS (
        UPDATE orders SET status = 'PAID', paid_at = now()
        WHERE id = $1 AND client = $2 AND status = 'UNPAID' AND close_at > now()
        RETURNING id, paid_at),
      logged AS (
        INSERT INTO order_log (order_id, event, at) SELECT id, 'PAID', paid_at FROM paid),
      evented AS (
        INSERT INTO outbox (order_id, type, payload, created_at)
        SELECT id, 'ORDER_PAID', jsonb_build_object('orderId', id::text, 'paidAt', paid_at), paid_at FROM paid)
      SELECT id FROM paid""";

  /**
   * The compare-and-set of a close, with its log line and ORDER_CLOSED event. {@code $1} is an array
   * of ids, {@code $2} the reason; {@code casCondition} adds the deadline check for timeouts, or the
   * client check for requests ({@code $3}, null for admins).
   */
  private static String close(String casCondition) {
    return """
        WITH closed AS (
          UPDATE orders SET status = 'CLOSED', close_reason = $2, closed_at = clock_timestamp()
          WHERE id = ANY($1) AND status = 'UNPAID' %s
          RETURNING id, close_reason, close_at, closed_at),
        logged AS (
          INSERT INTO order_log (order_id, event, detail, at) SELECT id, 'CLOSED', close_reason, closed_at FROM closed),
        evented AS (
          INSERT INTO outbox (order_id, type, payload, created_at)
          SELECT id, 'ORDER_CLOSED',
                 jsonb_build_object('orderId', id::text, 'reason', close_reason, 'closeAt', close_at, 'closedAt', closed_at),
                 closed_at
          FROM closed)
        SELECT id, close_at, closed_at FROM closed""".formatted(casCondition);
  }

  /** Timeouts compare the deadline with the database clock: never early, whatever the node's clock says. */
  static final String CLOSE_DUE = close("AND close_at <= now()");

  /** Cancel and admin close: any unpaid order of the client, due or not. */
  static final String CLOSE_ON_REQUEST = close("AND ($3::text IS NULL OR client = $3)");

  /**
   * Orders of a close batch that the database clock says are not due yet (the node's clock ran
   * ahead), with how long until they are, to be put back into the wheel by the node's clock.
   */
  static final String SELECT_NOT_YET_DUE = """
      SELECT id, (extract(epoch FROM close_at - now()) * 1000)::bigint AS due_in_millis
      FROM orders WHERE id = ANY($1) AND status = 'UNPAID' AND close_at > now()""";

  static final String LOCK_STOCK_OF_ORDERS = """
      SELECT sku FROM inventory
      WHERE sku IN (SELECT sku FROM order_items WHERE order_id = ANY($1))
      ORDER BY sku FOR UPDATE""";

  /** A close gives the reservation back to what is available. */
  static final String RELEASE_STOCK_OF_ORDERS = """
      UPDATE inventory AS inv
      SET available = inv.available + d.qty, reserved = inv.reserved - d.qty, updated_at = now()
      FROM (SELECT sku, sum(qty) AS qty FROM order_items WHERE order_id = ANY($1) GROUP BY sku) AS d
      WHERE inv.sku = d.sku""";

  /** A payment turns the reservation into a sale. */
  static final String SELL_STOCK_OF_ORDERS = """
      UPDATE inventory AS inv
      SET reserved = inv.reserved - d.qty, updated_at = now()
      FROM (SELECT sku, sum(qty) AS qty FROM order_items WHERE order_id = ANY($1) GROUP BY sku) AS d
      WHERE inv.sku = d.sku""";

  // ---- reminders

  static final String REMIND_DUE = """
      WITH reminded AS (
        UPDATE orders SET reminded_at = now()
        WHERE id = ANY($1) AND status = 'UNPAID' AND reminded_at IS NULL AND remind_at <= now() AND close_at > now()
        RETURNING id, close_at, reminded_at),
      logged AS (
        INSERT INTO order_log (order_id, event, at) SELECT id, 'REMINDED', reminded_at FROM reminded),
      evented AS (
        INSERT INTO outbox (order_id, type, payload, created_at)
        SELECT id, 'ORDER_CLOSE_REMINDER', jsonb_build_object('orderId', id::text, 'closeAt', close_at), reminded_at
        FROM reminded)
      SELECT id FROM reminded""";

  static final String SELECT_NOT_YET_REMINDED = """
      SELECT id, (extract(epoch FROM remind_at - now()) * 1000)::bigint AS due_in_millis FROM orders
      WHERE id = ANY($1) AND status = 'UNPAID' AND reminded_at IS NULL AND remind_at > now()""";

  // ---- reload and sweep: keyset pages over the partial index (shard, close_at, id)

  static final String PENDING_PAGE = """
      SELECT id, close_at, remind_at, reminded_at FROM orders
      WHERE shard = $1 AND status = 'UNPAID' AND (close_at, id) > ($2, $3)
      ORDER BY close_at, id LIMIT $4""";

  static final String OVERDUE_PAGE = """
      SELECT id, close_at FROM orders
      WHERE shard = $1 AND status = 'UNPAID' AND close_at < now() - $2::int * interval '1 second'
        AND (close_at, id) > ($3, $4)
      ORDER BY close_at, id LIMIT $5""";

  // ---- inventory

  static final String SELECT_INVENTORY = "SELECT sku, available, reserved FROM inventory WHERE sku = $1";

  static final String UPSERT_INVENTORY = """
      INSERT INTO inventory (sku, available) VALUES ($1, $2)
      ON CONFLICT (sku) DO UPDATE SET available = EXCLUDED.available, updated_at = now()
      RETURNING sku, available, reserved""";

  static final String PING = "SELECT 1";
}
