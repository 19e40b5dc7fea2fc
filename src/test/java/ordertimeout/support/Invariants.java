package ordertimeout.support;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** What must hold at every commit, checked against the database after each test that changes stock. */
public final class Invariants {
  private Invariants() {}

  public static void assertHold() {
    List<Map<String, Object>> wrongReservations = Sql.rows("""
        SELECT inv.sku, inv.reserved, coalesce(sum(i.qty) FILTER (WHERE o.status = 'UNPAID'), 0) AS unpaid_qty
        FROM inventory inv
        LEFT JOIN order_items i ON i.sku = inv.sku
        LEFT JOIN orders o ON o.id = i.order_id
        GROUP BY inv.sku, inv.reserved
        HAVING inv.reserved <> coalesce(sum(i.qty) FILTER (WHERE o.status = 'UNPAID'), 0)""");
    assertThat(wrongReservations).as("reserved = sum of qty of UNPAID items, per SKU").isEmpty();

    assertThat(Sql.count("SELECT count(*) FROM order_items i LEFT JOIN orders o ON o.id = i.order_id WHERE o.id IS NULL"))
        .as("items without their order (no foreign key checks it: migration V2)").isZero();

    assertThat(Sql.count("SELECT count(*) FROM orders WHERE close_reason = 'TIMEOUT' AND closed_at < close_at"))
        .as("orders closed before their deadline").isZero();

    // joins with grouped counts, not correlated subqueries: the outbox has no index on order_id
    assertThat(Sql.count("""
        SELECT count(*) FROM orders o
        LEFT JOIN (SELECT order_id, count(*) AS closes FROM order_log WHERE event = 'CLOSED' GROUP BY order_id) l
          ON l.order_id = o.id
        WHERE o.status = 'CLOSED' AND coalesce(l.closes, 0) <> 1""")
    ).as("closed orders without exactly one close log line").isZero();

    assertThat(Sql.count("""
        SELECT count(*) FROM orders o
        LEFT JOIN (SELECT order_id,
                          count(*) FILTER (WHERE type = 'ORDER_CLOSED') AS closed,
                          count(*) FILTER (WHERE type IN ('ORDER_CLOSED', 'ORDER_PAID')) AS final
                   FROM outbox GROUP BY order_id) e ON e.order_id = o.id
        WHERE (o.status = 'CLOSED') <> (coalesce(e.closed, 0) > 0) OR coalesce(e.final, 0) > 1""")
    ).as("orders whose ORDER_CLOSED / ORDER_PAID events disagree with their status").isZero();

    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID' AND closed_at IS NOT NULL"))
        .as("orders both paid and closed").isZero();
  }
}
