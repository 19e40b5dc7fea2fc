package ordertimeout.http;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One SKU's inventory row held by another transaction (an admin's long transaction, a paused node) must not hold
 * up the creates of other SKUs: those answer while the row is still held; those of the held SKU answer 503
 * {@code row_locked} with Retry-After once the intake's lock wait runs out, and go through again by themselves after
 * the row is released. Nothing refused is stored. Pays, of any SKU, do not lock inventory rows (migration V23) and
 * answer while it is held. The service runs its defaults: one create group at a time per intake instance.
 */
class LockedStockTest extends ServiceTestBase {
  private static final String HELD = "SKU-HELD";
  private static final List<String> OTHERS = List.of("SKU-FREE-0", "SKU-FREE-1", "SKU-FREE-2", "SKU-FREE-3");
  private static final Duration SAFETY = Duration.ofSeconds(60);

  private record Timed(Api.Response response, long millis) {}

  @Test
  void createsOfOtherSkusAnswerWhileOneSkuRowIsHeldAndThoseOfTheHeldSkuAnswer503UntilItIsReleased() {
    api.setStock(HELD, 1000);
    OTHERS.forEach(sku -> api.setStock(sku, 1000));
    int others;
    try (StockRowLock lock = StockRowLock.hold(HELD)) {
      others = createsWhileTheRowIsHeld("held by a transaction idle");
    }
    goesThroughOnceReleased(others);
  }

  /**
   * The same when the transaction holding the row runs a long statement (a script's update, a repair): its holder is
   * active, not idle, and still not passing through.
   */
  @Test
  void createsOfOtherSkusAnswerWhileTheTransactionHoldingOneSkuRowRunsALongStatement() throws Exception {
    api.setStock(HELD, 1000);
    OTHERS.forEach(sku -> api.setStock(sku, 1000));
    int others;
    try (Connection holder = TestDatabase.jdbc(); Statement sleep = holder.createStatement()) {
      Sql.holdStock(holder, HELD);
      CompletableFuture<Void> sleeping = CompletableFuture.runAsync(() -> {
        try {
          sleep.execute("SELECT pg_sleep(60) AS held_while_sleeping");
        } catch (SQLException cancelled) {
          // cancelled below, once the creates are answered
        }
      });
      Await.until("the holder's statement to run", SAFETY, () -> Sql.count(
          "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%held_while_sleeping'") == 1);
      others = createsWhileTheRowIsHeld("held by a transaction running a statement");
      sleep.cancel();
      sleeping.join();
      holder.rollback();
    }
    goesThroughOnceReleased(others);
  }

  /**
   * Three waves of 40 creates, one in four of the held SKU: every create of another SKU answers 201 while the row is
   * held, every one of the held SKU 503 row_locked. Answers how many of the others were created.
   */
  private int createsWhileTheRowIsHeld(String how) {
    List<CompletableFuture<Timed>> others = new ArrayList<>();
    List<CompletableFuture<Timed>> held = new ArrayList<>();
    for (int wave = 0; wave < 3; wave++) {
      List<CompletableFuture<Timed>> thisWave = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        if (i % 4 == 0) {
          held.add(timedCreate("u-held-" + i, HELD));
        }
        thisWave.add(timedCreate("u-" + wave + "-" + i, OTHERS.get(i % OTHERS.size())));
      }
      thisWave.forEach(create ->
          assertThat(await(create).response().status()).as(await(create).response().body()).isEqualTo(201));
      others.addAll(thisWave);
    }
    for (CompletableFuture<Timed> create : held) {
      Api.Response refused = await(create).response();
      assertThat(refused.status()).as(refused.body()).isEqualTo(503);
      assertThat(refused.code()).isEqualTo("row_locked");
      assertThat(refused.raw().headers().firstValue("Retry-After")).hasValue("1");
    }
    System.out.printf("while one SKU's row was %s: %d creates of other SKUs, all 201, latency %s; %d creates of "
        + "the held SKU, all 503 row_locked, latency %s%n", how, others.size(), figures(others), held.size(),
        figures(held));
    assertThat(service.service().stats().requestsShed("row_locked")).isGreaterThanOrEqualTo(held.size());
    return others.size();
  }

  private void goesThroughOnceReleased(int othersCreated) {
    Await.until("a create of the released SKU to go through by itself", SAFETY,
        () -> api.createOrder(UUID.randomUUID().toString(), orderBody("u-after", 600, HELD, 1)).status() == 201);
    assertThat(Sql.count("SELECT count(*) FROM order_items WHERE sku = ?", HELD))
        .as("only the create after the release").isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM order_items WHERE sku LIKE 'SKU-FREE-%'")).isEqualTo(othersCreated);
  }

  @Test
  void paysOfEverySkuAnswerWhileOneSkuRowIsHeld() {
    api.setStock(HELD, 100);
    api.setStock(OTHERS.get(0), 100);
    List<String> heldOrders = api.createOrders(10, 600, HELD);
    List<String> otherOrders = api.createOrders(30, 600, OTHERS.get(0));
    try (StockRowLock lock = StockRowLock.hold(HELD)) {
      List<CompletableFuture<Api.Response>> pays = new ArrayList<>();
      heldOrders.forEach(id -> pays.add(payAsync(id)));
      otherOrders.forEach(id -> pays.add(payAsync(id)));
      pays.forEach(pay -> assertThat(await(pay).status()).as(await(pay).body()).isEqualTo(200));
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID'")).as("paid while the row is held")
          .isEqualTo(heldOrders.size() + otherOrders.size());
    }
    assertThat(api.stock(HELD).getLong("reserved")).isZero();
    assertThat(api.stock(HELD).getLong("available")).isEqualTo(90);
  }

  private CompletableFuture<Timed> timedCreate(String userId, String sku) {
    long started = System.nanoTime();
    JsonObject body = orderBody(userId, 600, sku, 1);
    return api.createOrderAsync(UUID.randomUUID().toString(), body)
        .thenApply(response -> new Timed(response, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)));
  }

  private CompletableFuture<Api.Response> payAsync(String id) {
    return api.postAsync("/v1/orders/" + id + "/pay", Api.USER_KEY);
  }

  /** Fails the test when the answer does not come within the safety bound (the row is still held then). */
  private static <T> T await(CompletableFuture<T> future) {
    try {
      return future.get(SAFETY.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError("no answer within " + SAFETY + " while the row was held", e);
    }
  }

  private static String figures(List<CompletableFuture<Timed>> requests) {
    long[] millis = requests.stream().mapToLong(request -> request.join().millis()).sorted().toArray();
    return "median " + millis[millis.length / 2] + " ms, max " + millis[millis.length - 1] + " ms";
  }
}
