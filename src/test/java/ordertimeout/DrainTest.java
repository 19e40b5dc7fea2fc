package ordertimeout;

import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.store.Migrations;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.Prometheus;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Health and the drain on SIGTERM, through the very method Main's shutdown hook calls: while a close
 * batch is held in flight (its stock row locked by the test), the node is not ready, refuses new
 * orders with 503 draining, still answers reads (each answer ending its keep-alive connection), and only closes
 * once the batch has committed.
 */
class DrainTest {

  @Test
  void aDrainingNodeIsNotReadyRefusesNewOrdersAndLetsItsInFlightCloseBatchFinish() throws Exception {
    TestDatabase.reset();
    try (TestService node = TestService.start(Map.of("OT_DRAIN_TIMEOUT_SECONDS", "300"))) {
      Api api = node.api();
      Api.Response live = api.get("/health/live", null);
      assertThat(live.status()).isEqualTo(200);
      Api.Response ready = api.get("/health/ready", null);
      assertThat(ready.status()).as(ready.body()).isEqualTo(200);
      assertThat(checks(ready)).containsEntry("database", "UP").containsEntry("migrations", "UP")
          .containsEntry("wheel", "UP").containsEntry("drain", "UP");
      assertThat(check(ready, "migrations").getJsonObject("data").getString("applied"))
          .isEqualTo(Migrations.latestOnClassPath().getVersion());

      api.setStock("DRAIN", 10);
      String id = createOrder(api, 1).getString("id");
      Future<Void> drained;
      try (Connection lock = TestDatabase.jdbc()) {
        Sql.holdStock(lock, "DRAIN");
        Await.until("the close batch to wait for the stock row", Duration.ofSeconds(30),
            () -> !StockRowLock.waitingBackends().isEmpty());

        drained = node.service().drain();

        Api.Response notReady = api.get("/health/ready", null);
        assertThat(notReady.status()).isEqualTo(503);
        assertThat(checks(notReady)).containsEntry("drain", "DOWN").containsEntry("database", "UP");
        assertThat(check(notReady, "drain").getJsonObject("data").getBoolean("draining")).isTrue();
        assertThat(notReady.raw().headers().firstValue("Connection")).as("each answer ends its keep-alive connection")
            .contains("close");
        assertThat(api.get("/health/live", null).status()).isEqualTo(200);
        Api.Response refused = api.createOrder(UUID.randomUUID().toString(), body(600));
        assertThat(refused.status()).isEqualTo(503);
        assertThat(refused.code()).isEqualTo("draining");
        assertThat(refused.contentType()).isEqualTo("application/problem+json");
        assertThat(refused.raw().headers().firstValue("Retry-After")).contains("1");
        assertThat(Sql.count("SELECT count(*) FROM orders")).as("nothing stored").isEqualTo(1);
        assertThat(api.order(id).json().getString("status")).as("reads are served; the close has not committed").isEqualTo("UNPAID");
        assertThat(new Prometheus(api.get("/metrics", null).body()).sum("ordertimeout_draining")).isEqualTo(1);
        assertThat(drained.isComplete()).as("the close batch is still in flight").isFalse();
        lock.rollback();
      }

      TestService.await(drained);
      assertThat(Sql.rows("SELECT status, close_reason FROM orders WHERE id = ?", Long.parseLong(id)))
          .as("the batch in flight finished before Vert.x closed")
          .containsExactly(Map.of("status", "CLOSED", "close_reason", "TIMEOUT"));
      Invariants.assertHold();
    }
  }

  private static JsonObject createOrder(Api api, int timeoutSeconds) {
    Api.Response response = api.createOrder(UUID.randomUUID().toString(), body(timeoutSeconds));
    assertThat(response.status()).as(response.body()).isEqualTo(201);
    return response.json();
  }

  private static JsonObject body(int timeoutSeconds) {
    return new JsonObject().put("userId", "u-drain").put("timeoutSeconds", timeoutSeconds)
        .put("items", new JsonArray().add(new JsonObject().put("sku", "DRAIN").put("qty", 1)));
  }

  private static JsonObject check(Api.Response health, String id) {
    return health.json().getJsonArray("checks").stream().map(JsonObject.class::cast)
        .filter(check -> check.getString("id").equals(id)).findFirst().orElseThrow();
  }

  private static Map<String, String> checks(Api.Response health) {
    Map<String, String> byId = new java.util.HashMap<>();
    health.json().getJsonArray("checks").stream().map(JsonObject.class::cast)
        .forEach(check -> byId.put(check.getString("id"), check.getString("status")));
    return byId;
  }

}
