package ordertimeout;

import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The drain on SIGTERM waits for the HTTP requests in flight: a create inside its transaction, waiting for its
 * SKU's stock row (held by the test), when the drain begins, is answered once the row goes, before Vert.x
 * closes, instead of losing its connection without knowing whether its order was stored. One still waiting at the
 * drain's deadline has its statement cancelled and answers 503 {@code database_unavailable}, nothing stored, and the
 * drain keeps its bound.
 */
class DrainInFlightTest {
  private static final String SKU = "SKU-DRAIN-IN-FLIGHT";
  private static final Duration SAFETY = Duration.ofSeconds(30);

  @Test
  void aCreateInFlightWhenTheDrainBeginsIsAnsweredBeforeTheNodeCloses() throws Exception {
    TestDatabase.reset();
    // The create waits for the row up to 5 s (instead of 1 s); the drain gives what is in flight 20 s.
    try (TestService node = TestService.start(Map.of(
        "OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "5000",
        "OT_DRAIN_TIMEOUT_SECONDS", "20"))) {
      Api api = node.api();
      api.setStock(SKU, 10);
      CompletableFuture<Api.Response> create;
      Future<Void> drained;
      long drainStarted;
      try (StockRowLock lock = StockRowLock.hold(SKU)) {
        create = api.createOrderAsync(UUID.randomUUID().toString(), body());
        Await.until("the create to wait for the stock row", SAFETY, () -> !StockRowLock.waitingCreates().isEmpty());

        drainStarted = System.nanoTime();
        drained = node.service().drain();
        Await.sleep(500);
      }

      Api.Response answer = answerOf(create);
      // The row goes well within the create's lock wait and the drain's time: its transaction commits. (A 503 here
      // was the intake pool's sockets closing under it: they go with the first intake instance's undeploy.)
      assertThat(answer.status()).as(answer.body()).isEqualTo(201);
      String id = answer.json().getString("id");
      assertThat(Sql.rows("SELECT status FROM orders WHERE id = ?", Long.parseLong(id))).as("the order answered 201")
          .containsExactly(Map.of("status", "UNPAID"));
      assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(1);
      awaitWithin(drained, SAFETY);
      assertThat(Duration.ofNanos(System.nanoTime() - drainStarted)).as("the drain kept its bound")
          .isLessThan(Duration.ofSeconds(20));
      Invariants.assertHold();
    }
  }

  @Test
  void aCreateStillInFlightAtTheDrainsDeadlineAnswers503AndTheDrainKeepsItsBound() throws Exception {
    TestDatabase.reset();
    // The create would wait for the row 30 s; the drain gives it 1 s.
    try (TestService node = TestService.start(Map.of(
        "OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "30000",
        "OT_DRAIN_TIMEOUT_SECONDS", "1"))) {
      Api api = node.api();
      api.setStock(SKU, 10);
      try (StockRowLock lock = StockRowLock.hold(SKU)) {
        CompletableFuture<Api.Response> create = api.createOrderAsync(UUID.randomUUID().toString(), body());
        Await.until("the create to wait for the stock row", SAFETY, () -> !StockRowLock.waitingCreates().isEmpty());

        long drainStarted = System.nanoTime();
        Future<Void> drained = node.service().drain();
        Api.Response answer = answerOf(create);
        assertThat(answer.status()).as(answer.body()).isEqualTo(503);
        assertThat(answer.code()).isEqualTo("database_unavailable");
        awaitWithin(drained, SAFETY);
        // 1 s, then the cancel (health.databaseTimeoutMillis, 1 s, at most) and the answers: well under 5 s.
        assertThat(Duration.ofNanos(System.nanoTime() - drainStarted)).as("the drain kept its bound")
            .isLessThan(Duration.ofSeconds(5));
        assertThat(Sql.count("SELECT count(*) FROM orders")).as("nothing stored").isZero();
      }
    }
  }

  private static JsonObject body() {
    return new JsonObject().put("userId", "u-drain").put("timeoutSeconds", 600)
        .put("items", new JsonArray().add(new JsonObject().put("sku", SKU).put("qty", 1)));
  }

  private static void awaitWithin(Future<?> future, Duration timeout) {
    try {
      future.toCompletionStage().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      fail("the drain did not end within " + timeout, e);
    }
  }

  private static Api.Response answerOf(CompletableFuture<Api.Response> create) throws Exception {
    try {
      return create.get(SAFETY.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new AssertionError("the create in flight got no answer from the draining node", e.getCause());
    }
  }
}
