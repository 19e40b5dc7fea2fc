package ordertimeout.cluster;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import ordertimeout.support.WheelFires;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two nodes that both believe they own every shard (what a node that lost shards but has not noticed
 * yet looks like): both wheels fire the same deadlines, each node hands every due order to its close
 * path, and the compare-and-set lets each order close once, never early, with its stock released once.
 * A timer fired long after the close does nothing.
 */
class StaleOwnerTest {
  private static final int ORDERS = 400;
  /**
   * Long enough for the 400 creates and the second node's start and load to end before the first deadline
   * on a loaded machine (16 s seen with a three-node test running alongside; checked below, not assumed): a
   * node that loaded the orders after they closed would hold none of them.
   */
  private static final int TIMEOUT_SECONDS = 30;
  /** The sweep only as a safety net: a close it makes would mean a wheel missed a deadline by a minute. */
  private static final Map<String, String> WHEELS_ONLY = Map.of("OT_SWEEP_GRACE_SECONDS", "60");

  @Test
  void twoWheelsFiringTheSameDeadlinesCloseEachOrderOnce() throws Exception {
    TestDatabase.reset();
    try (TestService first = TestService.start(with(WHEELS_ONLY, "OT_NODE_ID", "11"))) {
      WheelFires firedByFirst = WheelFires.of(first.vertx());
      first.api().setStock("SKU-S1", 100_000);
      first.api().setStock("SKU-S2", 100_000);
      List<String> ids = new ArrayList<>();
      long creating = System.nanoTime();
      for (int chunk = 0; chunk < ORDERS; chunk += 50) {
        List<CompletableFuture<Api.Response>> creates = new ArrayList<>();
        for (int i = chunk; i < chunk + 50; i++) {
          JsonObject body = new JsonObject().put("userId", "u-" + (i % 50)).put("timeoutSeconds", TIMEOUT_SECONDS)
              .put("items", new JsonArray().add(new JsonObject().put("sku", i % 2 == 0 ? "SKU-S1" : "SKU-S2").put("qty", 1 + i % 3)));
          creates.add(first.api().createOrderAsync(UUID.randomUUID().toString(), body));
        }
        for (var create : creates) {
          Api.Response response = create.join();
          assertThat(response.status()).as(response.body()).isEqualTo(201);
          ids.add(response.json().getString("id"));
        }
      }

      try (TestService second = TestService.start(with(WHEELS_ONLY, "OT_NODE_ID", "12"))) {
        WheelFires firedBySecond = WheelFires.of(second.vertx());
        long loadedAfterMillis = (System.nanoTime() - creating) / 1_000_000;
        // the second node reloaded every pending order while none had closed yet: both wheels hold the same deadlines
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'"))
            .as("orders still unpaid when the second node had loaded them, %d ms after the first create (deadlines %d s after "
                + "their create): if some closed before, only the first wheel held them", loadedAfterMillis, TIMEOUT_SECONDS)
            .isEqualTo(ids.size());
        assertThat(second.api().stats().getJsonObject("pendingTimers").getLong("total")).isGreaterThanOrEqualTo(ids.size());

        // every pay answer is either the payment or the order already closed, nothing else
        Set<String> paid = new HashSet<>();
        Map<String, String> payer = new ConcurrentHashMap<>();
        int refusedAsClosed = 0;
        for (int i = 0; i < ids.size(); i += 4) {
          TestService node = i % 8 == 0 ? first : second;
          Api.Response pay = node.api().pay(ids.get(i));
          assertThat(pay.status()).as("pay %s: %s", ids.get(i), pay.body()).isIn(200, 409);
          if (pay.status() == 200) {
            assertThat(pay.json().getString("status")).as(pay.body()).isEqualTo("PAID");
            paid.add(ids.get(i));
            payer.put(ids.get(i), node == first ? "11" : "12");
          } else {
            assertThat(pay.code()).as(pay.body()).isEqualTo("order_closed");
            refusedAsClosed++;
          }
        }
        Await.until("every unpaid order closed", Duration.ofSeconds(60), () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
        Set<Long> timedOut = Sql.rows("SELECT id FROM orders WHERE status = 'CLOSED' AND close_reason = 'TIMEOUT'").stream()
            .map(row -> ((Number) row.get("id")).longValue()).collect(Collectors.toSet());
        assertThat(timedOut).hasSize(ids.size() - paid.size());
        // a wheel fires at the deadline whether or not the other node closed the order already
        Await.until("both wheels fired every timed-out order", Duration.ofSeconds(30),
            () -> firedByFirst.firedAll(timedOut) && firedBySecond.firedAll(timedOut));
        // a close is counted on its node right after its commit: the last ones may trail the database by a moment
        Await.until("both nodes counted their closes", Duration.ofSeconds(10), () -> first.service().stats().timeoutCloses(DueOrders.Path.WHEEL)
            + second.service().stats().timeoutCloses(DueOrders.Path.WHEEL) >= timedOut.size());

        long closedByFirst = first.service().stats().timeoutCloses(DueOrders.Path.WHEEL);
        long closedBySecond = second.service().stats().timeoutCloses(DueOrders.Path.WHEEL);
        long firstOverlap = timedOut.stream().filter(firedByFirst::fired).count();
        long secondOverlap = timedOut.stream().filter(firedBySecond::fired).count();
        System.out.printf("StaleOwnerTest: second node loaded %d ms after the first create; %d paid, %d pays answered order_closed; "
                + "%d timed out; the wheel of node 11 fired %d of them (closed %d), node 12 fired %d (closed %d); none twice%n",
            loadedAfterMillis, paid.size(), refusedAsClosed, timedOut.size(), firstOverlap, closedByFirst, secondOverlap, closedBySecond);
        assertThat(first.service().stats().timeoutCloses(DueOrders.Path.SWEEP) + second.service().stats().timeoutCloses(DueOrders.Path.SWEEP))
            .as("closes by the sweep: every deadline was the wheels' to close").isZero();
        assertThat(closedByFirst + closedBySecond).as("every close counted by exactly one of the two wheels that fired it")
            .isEqualTo(timedOut.size());
        for (String id : paid) {
          String other = payer.get(id).equals("11") ? "12" : "11";
          WheelFires firedByOther = other.equals("11") ? firedByFirst : firedBySecond;
          assertThat(firedByOther.fired(Long.parseLong(id))).as("the wheel of node %s, which did not take the payment of %s, fired it", other, id)
              .isTrue();
        }
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID'")).as("a stale timer closes no paid order")
            .isEqualTo(paid.size());

        // a stale timer fired long after: the second node asked to close every order again closes none
        long[] all = ids.stream().mapToLong(Long::parseLong).toArray();
        Integer closedAgain = TestService.await(second.vertx().eventBus()
            .<Integer>request(Addresses.CLOSE_DUE, new DueOrders(all, DueOrders.Path.WHEEL))
            .map(reply -> reply.body()));
        assertThat(closedAgain).isZero();
        assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).isEqualTo(timedOut.size());
        assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isEqualTo(timedOut.size());
        Invariants.assertHold();
      }
    }
  }

  private static Map<String, String> with(Map<String, String> common, String key, String value) {
    Map<String, String> all = new java.util.HashMap<>(common);
    all.put(key, value);
    return all;
  }

}
