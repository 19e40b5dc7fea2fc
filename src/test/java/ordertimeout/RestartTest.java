package ordertimeout;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Stopping and starting the service loses nothing: pending orders come back into the wheel, overdue ones close at once. */
class RestartTest {

  @Test
  void pendingOrdersSurviveARestartAndOverdueOnesCloseAtOnce() throws Exception {
    TestDatabase.reset();
    List<String> shortOnes = new ArrayList<>();
    List<String> longerOnes = new ArrayList<>();
    String paid;
    try (TestService first = TestService.start()) {
      first.api().setStock("SKU-R", 1000);
      for (int i = 0; i < 20; i++) {
        shortOnes.add(create(first, 1));
        longerOnes.add(create(first, 8));
      }
      paid = create(first, 8);
      assertThat(first.api().pay(paid).status()).isEqualTo(200);
    }
    Thread.sleep(2500); // the 1 s orders fall due while no node runs

    Instant restarted = Instant.now();
    try (TestService second = TestService.start()) {
      JsonObject stats = second.api().stats();
      assertThat(stats.getJsonObject("pendingTimers").getLong("total"))
          .as("the 8 s orders' deadlines and reminders are back in the wheel (the overdue ones may already be gone)")
          .isGreaterThanOrEqualTo(2L * longerOnes.size());

      Await.until("the overdue orders closed", Duration.ofSeconds(3), () -> shortOnes.stream().allMatch(id -> status(second, id).equals("CLOSED")));
      for (String id : shortOnes) {
        JsonObject order = second.api().order(id).json();
        assertThat(order.getString("closeReason")).isEqualTo("TIMEOUT");
        assertThat(Duration.between(restarted, Instant.parse(order.getString("closedAt"))))
            .as("an overdue order closes as soon as the node is back").isLessThan(Duration.ofSeconds(3));
      }
      assertThat(longerOnes).allSatisfy(id -> assertThat(status(second, id)).isEqualTo("UNPAID"));

      Await.until("the reloaded orders closed", Duration.ofSeconds(10), () -> longerOnes.stream().allMatch(id -> status(second, id).equals("CLOSED")));
      for (String id : longerOnes) {
        JsonObject order = second.api().order(id).json();
        Duration lateness = Duration.between(Instant.parse(order.getString("closeAt")), Instant.parse(order.getString("closedAt")));
        assertThat(lateness).as("closed by the reloaded wheel, on time").isBetween(Duration.ZERO, Duration.ofSeconds(1));
      }
      assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSE_REMINDER'"))
          .as("each longer order reminded once, across the restart").isEqualTo(longerOnes.size());
      assertThat(status(second, paid)).isEqualTo("PAID");
      assertThat(second.api().stock("SKU-R").getLong("reserved")).isZero();
      Invariants.assertHold();
    }
  }

  private static String create(TestService service, int timeoutSeconds) {
    JsonObject body = new JsonObject().put("userId", "u-" + UUID.randomUUID().toString().substring(0, 8))
        .put("timeoutSeconds", timeoutSeconds)
        .put("items", new io.vertx.core.json.JsonArray().add(new JsonObject().put("sku", "SKU-R").put("qty", 1)));
    var response = service.api().createOrder(UUID.randomUUID().toString(), body);
    assertThat(response.status()).as(response.body()).isEqualTo(201);
    return response.json().getString("id");
  }

  private static String status(TestService service, String id) {
    return service.api().order(id).json().getString("status");
  }

}
