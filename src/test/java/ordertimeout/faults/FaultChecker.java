package ordertimeout.faults;

import ordertimeout.faults.Recording.Kind;
import ordertimeout.faults.Recording.Operation;
import ordertimeout.faults.Recording.Outcome;
import ordertimeout.support.Await;
import ordertimeout.support.EventsTopic;
import ordertimeout.support.Sql;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * Reads the database and the events topic after a scenario and counts, for that scenario's orders and SKUs only
 * (their user ids and SKU names carry its tag), what {@link Figures} reports. It first waits, with bounds, for the
 * scenario's deadlines to have closed and its outbox to have been relayed: what is still missing then is counted.
 */
final class FaultChecker {
  /** Beyond the last deadline: the sweep's interval and grace and a margin for a loaded machine. */
  private static final Duration SETTLE_MARGIN = Duration.ofSeconds(FaultCluster.SWEEP_INTERVAL_SECONDS
      + FaultCluster.SWEEP_GRACE_SECONDS + 30);
  private static final Duration RELAY_WAIT = Duration.ofSeconds(60);

  private final FaultCluster cluster;
  private final FaultDatabase database;

  FaultChecker(FaultCluster cluster) {
    this.cluster = cluster;
    this.database = cluster.database;
  }

  Figures check(String scenario, LoadPlan plan, Recording recording, Figures.Bounds bounds) {
    String users = plan.tag() + "-u%";
    long lastDeadlineInMillis = database.count("SELECT coalesce(max(extract(epoch FROM close_at - now()) * 1000), 0)::bigint FROM orders "
        + "WHERE user_id LIKE ?", users);
    long settleMillis = Math.max(0, lastDeadlineInMillis) + SETTLE_MARGIN.toMillis();
    awaitQuietly(Duration.ofMillis(settleMillis),
        () -> database.count("SELECT count(*) FROM orders WHERE user_id LIKE ? AND status = 'UNPAID'", users) == 0);
    awaitQuietly(RELAY_WAIT, () -> database.count("SELECT count(*) FROM outbox e JOIN orders o ON o.id = e.order_id "
        + "WHERE o.user_id LIKE ? AND " + Sql.unpublished("e"), users) == 0);

    Map<String, List<OrderRow>> byUser = new HashMap<>();
    Map<String, OrderRow> byId = new HashMap<>();
    for (Map<String, Object> row : database.rows("SELECT id::text AS id, user_id, status FROM orders WHERE user_id LIKE ?", users)) {
      OrderRow order = new OrderRow((String) row.get("id"), (String) row.get("user_id"), (String) row.get("status"));
      byUser.computeIfAbsent(order.userId(), user -> new ArrayList<>()).add(order);
      byId.put(order.id(), order);
    }
    long lost = 0;
    long failedYetCommitted = 0;
    for (Operation operation : recording.operations()) {
      OrderRow order = operation.orderId() == null ? null : byId.get(operation.orderId());
      if (operation.kind() == Kind.CREATE && operation.outcome() == Outcome.OK && order == null) {
        lost++;
      } else if (operation.kind() == Kind.CREATE && operation.outcome() == Outcome.FAILED && byUser.containsKey(operation.userId())) {
        failedYetCommitted++;
      } else if (operation.kind() == Kind.PAY && operation.outcome() == Outcome.OK && (order == null || !order.status().equals("PAID"))) {
        lost++;
      } else if (operation.kind() == Kind.PAY && operation.outcome() == Outcome.FAILED && order != null && order.status().equals("PAID")) {
        failedYetCommitted++;
      }
    }
    long duplicateCreates = byUser.values().stream().mapToLong(orders -> orders.size() - 1).sum();
    long answered500 = recording.operations().stream().filter(operation -> operation.status() == 500).count();

    Events events = events(byId);
    long closedTwice = database.count("""
        WITH o AS (SELECT id FROM orders WHERE user_id LIKE ?)
        SELECT count(*) FROM o
        LEFT JOIN (SELECT order_id, count(*) AS n FROM order_log WHERE event = 'CLOSED' GROUP BY order_id) l ON l.order_id = o.id
        LEFT JOIN (SELECT order_id, count(*) AS n FROM outbox WHERE type = 'ORDER_CLOSED' GROUP BY order_id) e ON e.order_id = o.id
        WHERE coalesce(l.n, 0) > 1 OR coalesce(e.n, 0) > 1""", users) + events.closedTwice;

    String skus = plan.tag() + "-sku-%";
    long releasedTwice = database.count("""
        SELECT coalesce(sum(greatest(0, available + reserved + sold - ?)), 0)::bigint FROM (%s) stock""".formatted(STOCK), LoadPlan.STOCK_PER_SKU, skus);
    long invariantDifferences = database.count("SELECT count(*) FROM (%s) stock WHERE reserved <> unpaid OR available + reserved + sold < ?"
            .formatted(STOCK), skus, LoadPlan.STOCK_PER_SKU)
        + database.count("""
            SELECT count(*) FROM orders WHERE user_id LIKE ? AND ((status = 'PAID') <> (paid_at IS NOT NULL)
              OR (status = 'CLOSED') <> (closed_at IS NOT NULL) OR (status = 'CLOSED') <> (close_reason IS NOT NULL))""", users)
        + database.count("""
            WITH o AS (SELECT id, status FROM orders WHERE user_id LIKE ?)
            SELECT count(*) FROM o
            LEFT JOIN (SELECT order_id, count(*) FILTER (WHERE event = 'CLOSED') AS closed, count(*) FILTER (WHERE event = 'PAID') AS paid
                       FROM order_log GROUP BY order_id) l ON l.order_id = o.id
            LEFT JOIN (SELECT order_id, count(*) FILTER (WHERE type = 'ORDER_CLOSED') AS closed,
                              count(*) FILTER (WHERE type = 'ORDER_PAID') AS paid FROM outbox GROUP BY order_id) e ON e.order_id = o.id
            WHERE (o.status = 'CLOSED' AND (coalesce(l.closed, 0) = 0 OR coalesce(e.closed, 0) = 0))
               OR coalesce(l.paid, 0) <> (o.status = 'PAID')::int OR coalesce(e.paid, 0) <> (o.status = 'PAID')::int""", users)
        + events.unexpected;
    long early = database.count("SELECT count(*) FROM orders WHERE user_id LIKE ? AND close_reason = 'TIMEOUT' AND closed_at < close_at", users);
    long worstLateness = database.count("""
        SELECT coalesce(max(extract(epoch FROM coalesce(closed_at, now()) - close_at) * 1000), 0)::bigint FROM orders
        WHERE user_id LIKE ? AND (close_reason = 'TIMEOUT' OR (status = 'UNPAID' AND close_at < now()))""", users);

    return new Figures(scenario, plan.seed(), recording.count(Outcome.OK), recording.count(Outcome.FAILED),
        recording.count(Outcome.UNKNOWN), answered500, lost, failedYetCommitted, duplicateCreates, closedTwice, releasedTwice,
        early, invariantDifferences, events.lost, events.duplicates, worstLateness, recording.longestWaitMillis(),
        recording.longestSendLagMillis(), bounds);
  }

  /** Per SKU of the scenario: its stock row, the units of its PAID items (sold) and of its UNPAID items. */
  private static final String STOCK = """
      SELECT inv.sku, inv.available, inv.reserved,
             coalesce(sum(i.qty) FILTER (WHERE o.status = 'PAID'), 0) AS sold,
             coalesce(sum(i.qty) FILTER (WHERE o.status = 'UNPAID'), 0) AS unpaid
      FROM stock inv LEFT JOIN order_items i ON i.sku = inv.sku LEFT JOIN orders o ON o.id = i.order_id
      WHERE inv.sku LIKE ? GROUP BY inv.sku, inv.available, inv.reserved""";

  private record OrderRow(String id, String userId, String status) {}

  /**
   * The topic against the orders' states. lost: a state an order reached (created; paid or closed) without its event;
   * unexpected: an event of a state the order is not in, or a second event (another id) of a created or paid;
   * closedTwice: a second ORDER_CLOSED with another event id; duplicates: an event id delivered again.
   */
  private record Events(long lost, long unexpected, long closedTwice, long duplicates) {}

  private Events events(Map<String, OrderRow> orders) {
    Map<String, Set<Long>> idsByOrderAndType = new LinkedHashMap<>();
    Set<Long> seen = new HashSet<>();
    long duplicates = 0;
    for (EventsTopic.Event event : EventsTopic.readAll(cluster.settings.bootstrapServers(), cluster.settings.eventsTopic())) {
      if (!orders.containsKey(event.orderId())) {
        continue;
      }
      if (!seen.add(event.eventId())) {
        duplicates++;
      }
      idsByOrderAndType.computeIfAbsent(event.orderId() + " " + event.type(), key -> new HashSet<>()).add(event.eventId());
    }
    long lost = 0;
    long unexpected = 0;
    long closedTwice = 0;
    for (OrderRow order : orders.values()) {
      Set<String> expected = new HashSet<>(Set.of("ORDER_CREATED"));
      if (order.status().equals("PAID")) {
        expected.add("ORDER_PAID");
      } else if (order.status().equals("CLOSED")) {
        expected.add("ORDER_CLOSED");
      }
      for (String type : List.of("ORDER_CREATED", "ORDER_PAID", "ORDER_CLOSED")) {
        int distinct = idsByOrderAndType.getOrDefault(order.id() + " " + type, Set.of()).size();
        if (expected.contains(type) && distinct == 0) {
          lost++;
        } else if (!expected.contains(type) && distinct > 0) {
          unexpected++;
        } else if (distinct > 1 && type.equals("ORDER_CLOSED")) {
          closedTwice++;
        } else if (distinct > 1) {
          unexpected++;
        }
      }
    }
    return new Events(lost, unexpected, closedTwice, duplicates);
  }

  private static void awaitQuietly(Duration timeout, BooleanSupplier condition) {
    try {
      Await.until("the scenario to settle", timeout, condition);
    } catch (AssertionError stillNot) {
      // what has not settled is counted
    }
  }
}
