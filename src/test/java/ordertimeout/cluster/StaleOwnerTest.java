package ordertimeout.cluster;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.order.CloseReason;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two nodes that both believe they own every shard (what a node that lost shards but has not noticed
 * yet looks like): both wheels fire the same deadlines, and the compare-and-set lets each order close
 * once, never early, with its stock released once. A timer fired long after the close does nothing.
 */
class StaleOwnerTest {

  @Test
  void twoWheelsFiringTheSameDeadlinesCloseEachOrderOnce() throws Exception {
    TestDatabase.reset();
    try (TestService first = TestService.start(Map.of("OT_NODE_ID", "11"))) {
      first.api().setStock("SKU-S1", 100_000);
      first.api().setStock("SKU-S2", 100_000);
      List<String> ids = new ArrayList<>();
      for (int chunk = 0; chunk < 400; chunk += 50) {
        List<CompletableFuture<Api.Response>> creates = new ArrayList<>();
        for (int i = chunk; i < chunk + 50; i++) {
          JsonObject body = new JsonObject().put("userId", "u-" + (i % 50)).put("timeoutSeconds", 4)
              .put("items", new JsonArray().add(new JsonObject().put("sku", i % 2 == 0 ? "SKU-S1" : "SKU-S2").put("qty", 1 + i % 3)));
          creates.add(first.api().createOrderAsync(UUID.randomUUID().toString(), body));
        }
        for (var create : creates) {
          Api.Response response = create.join();
          assertThat(response.status()).as(response.body()).isEqualTo(201);
          ids.add(response.json().getString("id"));
        }
      }

      try (TestService second = TestService.start(Map.of("OT_NODE_ID", "12"))) {
        // the second node reloaded every pending order: both wheels hold the same deadlines now
        assertThat(second.api().stats().getJsonObject("pendingTimers").getLong("total")).isGreaterThanOrEqualTo(ids.size());
        List<String> paid = new ArrayList<>();
        for (int i = 0; i < ids.size(); i += 4) {
          TestService payer = i % 8 == 0 ? first : second;
          if (payer.api().pay(ids.get(i)).status() == 200) {
            paid.add(ids.get(i));
          }
        }
        Await.until("every unpaid order closed", Duration.ofSeconds(20), () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);

        long closed = Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED' AND close_reason = 'TIMEOUT'");
        assertThat(closed).isEqualTo(ids.size() - paid.size());
        long closedByFirst = first.service().stats().snapshot().closesByReason().get(CloseReason.TIMEOUT);
        long closedBySecond = second.service().stats().snapshot().closesByReason().get(CloseReason.TIMEOUT);
        System.out.printf("StaleOwnerTest: %d closed: %d by node 11, %d by node 12, none twice%n",
            closed, closedByFirst, closedBySecond);
        assertThat(closedByFirst + closedBySecond).as("every close counted by exactly one node").isEqualTo(closed);

        // a stale timer fired long after: the second node asked to close every order again closes none
        long[] all = ids.stream().mapToLong(Long::parseLong).toArray();
        Integer closedAgain = TestService.await(second.vertx().eventBus()
            .<Integer>request(Addresses.CLOSE_DUE, new DueOrders(all, DueOrders.Path.WHEEL))
            .map(reply -> reply.body()));
        assertThat(closedAgain).isZero();
        assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).isEqualTo(closed);
        assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isEqualTo(closed);
        Invariants.assertHold();
      }
    }
  }

}
