package ordertimeout.support;

import ordertimeout.config.AppConfig;
import org.assertj.core.api.SoftAssertions;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What must hold at every commit, checked against the database after each test that touches orders or
 * stock. Every violation found is reported, not only the first.
 */
public final class Invariants {
  /**
   * Beyond the sweep's interval and grace: the time a close of an overdue order may take on a loaded machine
   * (the sweep's page query and the close transaction, with retries).
   */
  public static final Duration CLOSE_MARGIN = Duration.ofSeconds(10);
  /** The longest the check waits for due orders to be closed. */
  private static final Duration MAX_WAIT = Duration.ofSeconds(30);
  private static final int SHOWN = 20;

  private Invariants() {}

  /**
   * The invariants, and that no order stays unpaid past its deadline: call while the node (or every node) of
   * {@code config} still runs, and has run since {@code runningSince}. An unpaid order is overdue from its deadline,
   * or from when the node started if that was later (nothing could close it before); it may stay unpaid for
   * {@link #overdueAllowance} at most. Due orders still within it are waited for (up to {@link #MAX_WAIT}), so that an
   * order whose close the database keeps refusing is caught even when it fell due as the test ended.
   */
  public static void assertHold(AppConfig config, Instant runningSince) {
    Duration allowance = overdueAllowance(config);
    List<Map<String, Object>> overdue = overdueAfterWaiting(allowance, runningSince);
    SoftAssertions softly = new SoftAssertions();
    softly.assertThat(overdue)
        .as("unpaid orders overdue by more than %s (sweep interval %d s + grace %d s + %d s) (first %d)",
            allowance, config.sweep().intervalSeconds(), config.sweep().graceSeconds(), CLOSE_MARGIN.toSeconds(), SHOWN)
        .isEmpty();
    checkState(softly);
    softly.assertAll();
  }

  /**
   * The invariants of the data alone, for a test whose service no longer runs (nothing would close an
   * overdue order). Where the service still runs, {@link #assertHold(AppConfig, Instant)} checks more.
   */
  public static void assertHold() {
    SoftAssertions softly = new SoftAssertions();
    checkState(softly);
    softly.assertAll();
  }

  /** How long past its deadline a running node may leave an order unpaid: the sweep's interval and grace, and a margin. */
  public static Duration overdueAllowance(AppConfig config) {
    return Duration.ofSeconds(config.sweep().intervalSeconds() + config.sweep().graceSeconds()).plus(CLOSE_MARGIN);
  }

  /**
   * The unpaid orders overdue by more than {@code allowance}: at once if there are any; else, while some due order
   * would cross the allowance within {@link #MAX_WAIT} from the start of the check, the check waits for it to be
   * closed (or to cross it). Orders that could not cross it by then (a long sweep interval) are not waited for.
   */
  private static List<Map<String, Object>> overdueAfterWaiting(Duration allowance, Instant runningSince) {
    long waitUntil = System.nanoTime() + MAX_WAIT.toNanos();
    while (true) {
      List<Map<String, Object>> due = KeptConnection.rows("""
          SELECT id, shard, close_at, now() - due_since AS overdue_for,
                 (extract(epoch FROM now() - due_since) * 1000)::bigint AS overdue_millis
          FROM (SELECT id, shard, close_at, greatest(close_at, hold_until, to_timestamp(? / 1000.0)) AS due_since
                FROM orders WHERE status = 'UNPAID' AND greatest(close_at, hold_until) <= now()) due
          ORDER BY close_at LIMIT 1000""", runningSince.toEpochMilli());
      List<Map<String, Object>> overdue = due.stream()
          .filter(row -> overdueMillis(row) > allowance.toMillis())
          .limit(SHOWN)
          .toList();
      long waitLeftMillis = (waitUntil - System.nanoTime()) / 1_000_000;
      boolean worthWaiting = due.stream().anyMatch(row -> allowance.toMillis() - overdueMillis(row) <= waitLeftMillis);
      if (!overdue.isEmpty() || !worthWaiting) {
        return overdue;
      }
      Await.sleep(100);
    }
  }

  private static long overdueMillis(Map<String, Object> row) {
    return ((Number) row.get("overdue_millis")).longValue();
  }

  private static void checkState(SoftAssertions softly) {
    softly.assertThat(KeptConnection.rows("""
        SELECT inv.sku, inv.reserved, coalesce(sum(i.qty) FILTER (WHERE o.status = 'UNPAID'), 0) AS unpaid_qty
        FROM stock inv
        LEFT JOIN order_items i ON i.sku = inv.sku
        LEFT JOIN orders o ON o.id = i.order_id
        GROUP BY inv.sku, inv.reserved
        HAVING inv.reserved <> coalesce(sum(i.qty) FILTER (WHERE o.status = 'UNPAID'), 0)
        ORDER BY inv.sku LIMIT ?""", SHOWN))
        .as("reserved = sum of qty of UNPAID items, per SKU (first %d)", SHOWN).isEmpty();

    checkStockConserved(softly);

    softly.assertThat(KeptConnection.rows("""
        WITH late AS (SELECT order_id, count(*) AS events FROM outbox WHERE type = 'ORDER_LATE_PAYMENT' GROUP BY order_id)
        SELECT o.id, o.status, o.late_payment_at, coalesce(l.events, 0) AS events
        FROM orders o LEFT JOIN late l ON l.order_id = o.id
        WHERE coalesce(l.events, 0) <> (o.late_payment_at IS NOT NULL)::int
           OR (o.late_payment_at IS NOT NULL AND (o.status <> 'CLOSED' OR o.reopened_at IS NOT NULL))
        ORDER BY o.id LIMIT ?""", SHOWN))
        .as("orders without exactly one ORDER_LATE_PAYMENT event if a pay came after their close and none otherwise, "
            + "or both refunded and reopened (first %d)", SHOWN).isEmpty();

    softly.assertThat(KeptConnection.rows("""
        WITH expected AS (
          SELECT client, count(*) AS unpaid, sum(units) AS units
          FROM (SELECT o.client, coalesce(sum(i.qty), 0) AS units FROM orders o LEFT JOIN order_items i ON i.order_id = o.id
                WHERE o.status = 'UNPAID' GROUP BY o.id, o.client) per_order
          GROUP BY client),
        counted AS (SELECT client, sum(unpaid) AS unpaid, sum(units) AS units FROM client_holdings GROUP BY client)
        SELECT coalesce(e.client, c.client) AS client, c.unpaid, c.units, e.unpaid AS unpaid_orders, e.units AS their_units
        FROM expected e FULL JOIN counted c ON c.client = e.client
        WHERE coalesce(e.unpaid, 0) <> coalesce(c.unpaid, 0) OR coalesce(e.units, 0) <> coalesce(c.units, 0)
        ORDER BY 1 LIMIT ?""", SHOWN))
        .as("client_holdings = the unpaid orders of each client and the units of their items (first %d)", SHOWN).isEmpty();

    softly.assertThat(KeptConnection.count("SELECT count(*) FROM order_items i LEFT JOIN orders o ON o.id = i.order_id WHERE o.id IS NULL"))
        .as("items without their order (no foreign key checks it: migration V2)").isZero();

    softly.assertThat(KeptConnection.rows("""
        SELECT id, close_at, hold_until, closed_at FROM orders
        WHERE close_reason = 'TIMEOUT' AND closed_at < greatest(close_at, hold_until) ORDER BY id LIMIT ?""", SHOWN))
        .as("orders closed before their deadline, or before the hold of their started payment (first %d)", SHOWN).isEmpty();

    softly.assertThat(KeptConnection.rows("""
        SELECT id, status, close_reason, paid_at, closed_at FROM orders
        WHERE (status = 'PAID') <> (paid_at IS NOT NULL)
           OR (status = 'CLOSED') <> (closed_at IS NOT NULL)
           OR (status = 'CLOSED') <> (close_reason IS NOT NULL)
        ORDER BY id LIMIT ?""", SHOWN))
        .as("orders whose paid_at, closed_at or close_reason disagree with their status (first %d)", SHOWN).isEmpty();

    // joins with grouped counts, not correlated subqueries: the outbox has no index on order_id
    softly.assertThat(KeptConnection.rows("""
        SELECT o.id, o.status,
               coalesce(l.closed, 0) AS closed_lines, coalesce(l.paid, 0) AS paid_lines,
               coalesce(e.closed, 0) AS closed_events, coalesce(e.paid, 0) AS paid_events
        FROM orders o
        LEFT JOIN (SELECT order_id, count(*) FILTER (WHERE event = 'CLOSED') AS closed, count(*) FILTER (WHERE event = 'PAID') AS paid
                   FROM order_log WHERE event IN ('CLOSED', 'PAID') GROUP BY order_id) l ON l.order_id = o.id
        LEFT JOIN (SELECT order_id, count(*) FILTER (WHERE type = 'ORDER_CLOSED') AS closed,
                          count(*) FILTER (WHERE type = 'ORDER_PAID') AS paid
                   FROM outbox WHERE type IN ('ORDER_CLOSED', 'ORDER_PAID') GROUP BY order_id) e ON e.order_id = o.id
        WHERE coalesce(l.closed, 0) <> (o.status = 'CLOSED' OR o.reopened_at IS NOT NULL)::int
           OR coalesce(l.paid, 0) <> (o.status = 'PAID')::int
           OR coalesce(e.closed, 0) <> (o.status = 'CLOSED' OR o.reopened_at IS NOT NULL)::int
           OR coalesce(e.paid, 0) <> (o.status = 'PAID')::int
        ORDER BY o.id LIMIT ?""", SHOWN))
        .as("orders without exactly one close log line and one ORDER_CLOSED event if CLOSED (or reopened by a late pay), "
            + "one pay log line and one ORDER_PAID event if PAID, and none of either otherwise (first %d)", SHOWN)
        .isEmpty();
  }

  /**
   * Per SKU, neither {@code available} nor {@code reserved} is below zero (the database checks neither as view stock
   * shows them since V24: the inventory row's own {@code available} goes below zero when creates take units that
   * closes counted apart), and {@code available + reserved + sold} (sold: the items of PAID orders) equals what the
   * tests put in, as {@link StockLedger} recorded it from their own requests: a release that gives back more (or
   * less) than it should, or a sale that also takes from {@code available}, shows here even when {@code reserved}
   * comes out right.
   */
  private static void checkStockConserved(SoftAssertions softly) {
    Map<String, Long> putIn = StockLedger.putIn();
    Map<String, String> wrong = new LinkedHashMap<>();
    Set<String> seen = new TreeSet<>();
    for (Map<String, Object> row : KeptConnection.rows("""
        SELECT inv.sku, inv.available, inv.reserved, coalesce(s.sold, 0) AS sold
        FROM stock inv
        LEFT JOIN (SELECT i.sku, sum(i.qty) AS sold FROM order_items i JOIN orders o ON o.id = i.order_id
                   WHERE o.status = 'PAID' GROUP BY i.sku) s ON s.sku = inv.sku
        ORDER BY inv.sku""")) {
      String sku = (String) row.get("sku");
      seen.add(sku);
      long available = ((Number) row.get("available")).longValue();
      long reserved = ((Number) row.get("reserved")).longValue();
      long sold = ((Number) row.get("sold")).longValue();
      Long expected = putIn.get(sku);
      if (available < 0 || reserved < 0) {
        wrong.put(sku, "available %d, reserved %d: below zero".formatted(available, reserved));
      } else if (expected == null) {
        wrong.put(sku, "no record of what was put in: stock written without Api (use StockLedger.putIn after writing it with SQL)");
      } else if (StockLedger.isUntrackable(expected)) {
        wrong.put(sku, "stock set while payments of it were committing, or by a request whose available could not be read: "
            + "what it was set to is unknown");
      } else if (available + reserved + sold != expected) {
        wrong.put(sku, "available %d + reserved %d + sold %d = %d, but %d were put in"
            .formatted(available, reserved, sold, available + reserved + sold, expected));
      }
    }
    List<String> vanished = new ArrayList<>(putIn.keySet());
    vanished.removeAll(seen);
    vanished.forEach(sku -> wrong.put(sku, "put in, but no inventory row"));
    Map<String, String> shown = new LinkedHashMap<>();
    wrong.entrySet().stream().limit(SHOWN).forEach(entry -> shown.put(entry.getKey(), entry.getValue()));
    softly.assertThat(shown).as("stock: none below zero, available + reserved + sold = put in, per SKU "
        + "(%d SKUs wrong, first %d)", wrong.size(), SHOWN).isEmpty();
  }
}
