package ordertimeout.close;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.DueTap;
import ordertimeout.support.Invariants;
import ordertimeout.support.OwnNode;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node whose wall clock is 60 s off the database's (node.clockOffsetMillis). Ahead: its wheel fires every
 * deadline 60 s early, the database refuses the close, and the order goes back into the wheel for exactly the
 * time the database still wants: it closes from the wheel, on time. Behind: its wheel would fire 60 s late, so
 * the sweep (which asks the database what is overdue) closes the orders, within sweep.graceSeconds +
 * sweep.intervalSeconds (1 + 1 here) and the time of a pass. Never early in either case, reminders included.
 */
class ClockSkewTest {
  private static final int ORDERS = 20;
  private static final int TIMEOUT_SECONDS = 3;
  private static final String SKU = "SKEW";
  private static final Duration SAFETY = Duration.ofSeconds(60);
  /** Generous for this shared machine; far under the 60 s of the skew. */
  private static final long LATENESS_SAFETY_MILLIS = 8_000;

  @BeforeEach
  void emptyTables() {
    TestDatabase.reset();
  }

  @Test
  void aNodeAheadClosesFromItsWheelNeverEarlyAfterOnePutBack() {
    Vertx vertx = Vertx.vertx();
    DueTap tap = DueTap.on(vertx);
    try (OwnNode node = OwnNode.start(vertx, TestDatabase.connectOptions(), Map.of("OT_NODE_CLOCK_OFFSET_MILLIS", "60000"))) {
      createOrders(node.api());
      awaitAllClosed();
      assertThat(node.service().stats().timeoutCloses(DueOrders.Path.WHEEL)).isEqualTo(ORDERS);
      tap.timesSent(Addresses.CLOSE_DUE, DueOrders.Path.WHEEL).forEach((id, times) -> assertThat(times)
          .as("order %d: fired early, put back for the time the database wants, fired again", id).isBetween(2, 3));
      assertNeverEarly();
      assertThat(worstLatenessMillis()).as("closed from the wheel on time").isLessThan(LATENESS_SAFETY_MILLIS);
      Invariants.assertHold();
    }
  }

  @Test
  void aNodeBehindHasItsOrdersClosedByTheSweepWithinGracePlusInterval() {
    try (OwnNode node = OwnNode.start(Vertx.vertx(), TestDatabase.connectOptions(), Map.of("OT_NODE_CLOCK_OFFSET_MILLIS", "-60000"))) {
      createOrders(node.api());
      awaitAllClosed();
      assertThat(node.service().stats().timeoutCloses(DueOrders.Path.SWEEP)).isEqualTo(ORDERS);
      assertNeverEarly();
      long bound = (node.config().sweep().graceSeconds() + node.config().sweep().intervalSeconds()) * 1000L;
      assertThat(worstLatenessMillis()).as("grace + interval (%d ms), and a pass", bound).isLessThan(bound + LATENESS_SAFETY_MILLIS);
      Invariants.assertHold();
    }
  }

  private static void createOrders(Api api) {
    api.setStock(SKU, ORDERS);
    for (int i = 0; i < ORDERS; i++) {
      JsonObject body = new JsonObject().put("userId", "u-skew").put("timeoutSeconds", TIMEOUT_SECONDS)
          .put("items", new JsonArray().add(new JsonObject().put("sku", SKU).put("qty", 1)));
      Api.Response created = api.createOrder(UUID.randomUUID().toString(), body);
      assertThat(created.status()).as(created.body()).isEqualTo(201);
    }
  }

  private static void awaitAllClosed() {
    Await.until("every order closed", SAFETY, () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED'") == ORDERS);
  }

  private static void assertNeverEarly() {
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE closed_at < close_at")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE reminded_at < remind_at")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE close_reason = 'TIMEOUT'")).isEqualTo(ORDERS);
  }

  private static long worstLatenessMillis() {
    return Sql.count("SELECT (extract(epoch FROM max(closed_at - close_at)) * 1000)::bigint FROM orders");
  }
}
