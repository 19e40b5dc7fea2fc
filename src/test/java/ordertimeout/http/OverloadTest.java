package ordertimeout.http;

import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Load the node cannot start in time is shed with 503 {@code overloaded} and Retry-After, and nothing it refused is
 * ever stored. The database is made slow by a held stock row: the one create group in flight waits for it (with a
 * lock wait longer than the test), so that every other create queues behind it, on a node with one intake instance,
 * a queue of 2 and a deadline of 1 s, and one intake connection with room for one caller to wait for it.
 */
class OverloadTest extends ServiceTestBase {
  private static final String HELD = "SKU-SLOW";
  private static final String OTHER = "SKU-QUEUED";
  private static final Duration SAFETY = Duration.ofSeconds(60);
  private static final String WAITING_FOR_A_LOCK = """
      SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name LIKE 'order-timeout node %'""";

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_HTTP_INSTANCES", "1",
        "OT_INTAKE_MAX_QUEUED", "2",
        "OT_INTAKE_REQUEST_DEADLINE_MILLIS", "1000",
        "OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "60000",
        "OT_DATABASE_POOL_SIZE", "1",
        "OT_DATABASE_INTAKE_MAX_WAIT_QUEUE", "1");
  }

  @Test
  void requestsThatCannotStartInTimeAnswer503OverloadedAndNoneOfTheRefusedCreatesIsEverStored() {
    api.setStock(HELD, 100);
    api.setStock(OTHER, 100);
    CompletableFuture<Api.Response> inFlight;
    try (StockRowLock lock = StockRowLock.hold(HELD)) {
      inFlight = api.createOrderAsync(UUID.randomUUID().toString(), orderBody("u-0", 600, HELD, 1));
      Await.until("the create group in flight to wait for the held row", SAFETY, () -> Sql.count(WAITING_FOR_A_LOCK) == 1);

      List<CompletableFuture<Api.Response>> queued = IntStream.range(0, 5)
          .mapToObj(i -> api.createOrderAsync(UUID.randomUUID().toString(), orderBody("u-" + i, 600, OTHER, 1))).toList();
      queued.forEach(create -> assertOverloaded(await(create)));

      // The intake pool's one connection is the group's: one read waits for it, the others are refused at once.
      List<CompletableFuture<Api.Response>> reads = IntStream.range(0, 5)
          .mapToObj(i -> api.sendAsync(api.request("GET", "/v1/orders/" + (1000 + i), Api.USER_KEY, null))).toList();
      Await.until("all reads but the one waiting for the connection refused", SAFETY,
          () -> reads.stream().filter(CompletableFuture::isDone).count() == reads.size() - 1);
      reads.stream().filter(CompletableFuture::isDone).forEach(read -> assertOverloaded(await(read)));
      assertThat(Sql.count("SELECT count(*) FROM orders")).isZero();
    }

    assertOverloaded(await(inFlight)); // decided after its deadline, inside its transaction: refused
    assertThat(Sql.count("SELECT count(*) FROM orders")).as("none of the refused creates stored").isZero();
    assertThat(api.stock(HELD).getLong("reserved")).isZero();
    assertThat(api.stock(OTHER).getLong("reserved")).isZero();
    assertThat(service.service().stats().requestsShed("overloaded")).isEqualTo(1 + 5 + 4);
    assertThat(api.get("/metrics", null).body()).contains("ordertimeout_requests_shed_total{code=\"overloaded\"} 10.0");
  }

  private static void assertOverloaded(Api.Response response) {
    assertThat(response.status()).as(response.body()).isEqualTo(503);
    assertThat(response.code()).isEqualTo("overloaded");
    assertThat(response.raw().headers().firstValue("Retry-After")).hasValue("1");
  }

  private static Api.Response await(CompletableFuture<Api.Response> future) {
    try {
      return future.get(SAFETY.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError("no answer within " + SAFETY, e);
    }
  }
}
