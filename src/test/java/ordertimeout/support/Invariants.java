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

    assertThat(Sql.count("SELECT count(*) FROM orders WHERE close_reason = 'TIMEOUT' AND closed_at < close_at"))
        .as("orders closed before their deadline").isZero();

    assertThat(Sql.count("""
        SELECT count(*) FROM orders o
        WHERE o.status = 'CLOSED'
          AND (SELECT count(*) FROM order_log l WHERE l.order_id = o.id AND l.event = 'CLOSED') <> 1""")
    ).as("closed orders without exactly one close log line").isZero();

    assertThat(Sql.count("""
        SELECT count(*) FROM orders o
        WHERE (o.status = 'CLOSED') <> EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.id AND e.type = 'ORDER_CLOSED')
           OR (SELECT count(*) FROM outbox e WHERE e.order_id = o.id AND e.type IN ('ORDER_CLOSED', 'ORDER_PAID')) > 1""")
    ).as("orders whose ORDER_CLOSED / ORDER_PAID events disagree with their status").isZero();

    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID' AND closed_at IS NOT NULL"))
        .as("orders both paid and closed").isZero();
  }
}
