package ordertimeout.store;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import org.junit.jupiter.api.Test;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class StockTest extends ServiceTestBase {

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_ORDERS_MAX_UNPAID_PER_USER", "3");
  }

  @Test
  void concurrentCreatesNeverOversell() {
    api.setStock("HOT", 10);
    List<CompletableFuture<Api.Response>> sent = IntStream.range(0, 60)
        .mapToObj(i -> api.createOrderAsync(UUID.randomUUID().toString(), orderBody("buyer-" + i, 600, "HOT", 1)))
        .toList();
    List<Api.Response> responses = sent.stream().map(CompletableFuture::join).toList();
    assertThat(responses.stream().filter(r -> r.status() == 201).count()).isEqualTo(10);
    assertThat(responses.stream().filter(r -> r.status() == 409).map(Api.Response::code))
        .hasSize(50).containsOnly("insufficient_stock");
    assertThat(api.stock("HOT").getLong("available")).isZero();
    assertThat(api.stock("HOT").getLong("reserved")).isEqualTo(10);
  }

  @Test
  void concurrentMultiSkuOrdersInOppositeOrdersDoNotDeadlock() {
    for (String sku : List.of("A", "B", "C", "D")) {
      api.setStock(sku, 1000);
    }
    List<CompletableFuture<Api.Response>> sent = IntStream.range(0, 80)
        .mapToObj(i -> api.createOrderAsync(UUID.randomUUID().toString(), i % 2 == 0
            ? orderBody("buyer-" + i, 600, "A", 1, "B", 1, "C", 1, "D", 1)
            : orderBody("buyer-" + i, 600, "D", 1, "C", 1, "B", 1, "A", 1)))
        .toList();
    assertThat(sent.stream().map(CompletableFuture::join)).allSatisfy(r -> assertThat(r.status()).as(r.body()).isEqualTo(201));
    assertThat(api.stock("A").getLong("reserved")).isEqualTo(80);
  }

  @Test
  void anOrderWithOneShortItemReservesNothing() {
    api.setStock("PLENTY", 100);
    api.setStock("SCARCE", 1);
    Api.Response response = api.createOrder("k", orderBody("u-1", 600, "PLENTY", 5, "SCARCE", 2));
    assertThat(response.status()).isEqualTo(409);
    assertThat(response.code()).isEqualTo("insufficient_stock");
    assertThat(api.stock("PLENTY").getLong("available")).isEqualTo(100);
    assertThat(api.stock("PLENTY").getLong("reserved")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM orders")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM outbox")).isZero();
  }

  @Test
  void tooManyUnpaidOrdersForOneUserIs429() {
    api.setStock("SKU-1", 100);
    for (int i = 0; i < 3; i++) {
      create("greedy", 600, "SKU-1", 1);
    }
    Api.Response fourth = api.createOrder("k-4", orderBody("greedy", 600, "SKU-1", 1));
    assertThat(fourth.status()).isEqualTo(429);
    assertThat(fourth.code()).isEqualTo("too_many_unpaid_orders");
    assertThat(api.stock("SKU-1").getLong("reserved")).isEqualTo(3);
    assertThat(create("someone-else", 600, "SKU-1", 1).getString("status")).isEqualTo("UNPAID");
  }

  @Test
  void adminSetsAvailableStockOfTheVersionItRead() {
    Api.Response created = api.put("/v1/admin/inventory/NEW-SKU", Api.ADMIN_KEY, "{\"available\":100}");
    assertThat(created.status()).isEqualTo(200);
    assertThat(created.json().getMap()).isEqualTo(Map.of("sku", "NEW-SKU", "available", 100, "reserved", 0));
    assertThat(created.etag()).as("the row's version and the units closes gave back").matches("\"[0-9]+-0\"");
    create("u-1", 600, "NEW-SKU", 10);
    String read = api.get("/v1/admin/inventory/NEW-SKU", Api.ADMIN_KEY).etag();
    Api.Response lowered = putIfMatch("NEW-SKU", 5, read);
    assertThat(lowered.status()).as(lowered.body()).isEqualTo(200);
    assertThat(lowered.json().getLong("available")).isEqualTo(5);
    assertThat(lowered.json().getLong("reserved")).as("reservations stay").isEqualTo(10);
    assertThat(lowered.etag()).isNotEqualTo(read).isEqualTo(api.get("/v1/admin/inventory/NEW-SKU", Api.ADMIN_KEY).etag());
  }

  @Test
  void aSetFromAStaleReadIsRefusedAndChangesNothing() {
    api.setStock("SKU-1", 100);
    String read = api.get("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY).etag();
    create("u-1", 600, "SKU-1", 2);
    long logLines = Sql.count("SELECT count(*) FROM inventory_log");

    Api.Response stale = putIfMatch("SKU-1", 150, read);

    assertThat(stale.status()).as(stale.body()).isEqualTo(412);
    assertThat(stale.code()).isEqualTo("precondition_failed");
    assertThat(api.stock("SKU-1").getMap()).isEqualTo(Map.of("sku", "SKU-1", "available", 98, "reserved", 2));
    assertThat(Sql.count("SELECT count(*) FROM inventory_log")).isEqualTo(logLines);
    assertThat(putIfMatch("SKU-1", 150, "W/" + api.get("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY).etag()).status())
        .as("a weak tag never matches").isEqualTo(412);
    assertThat(putIfMatch("NO-SUCH-SKU", 1, "*").status()).as("no row, no version to match").isEqualTo(412);
  }

  @Test
  void aSetFromAReadBeforeACloseIsRefused() {
    api.setStock("SKU-1", 100);
    String cancelled = create("u-1", 600, "SKU-1", 2).getString("id");
    String read = api.get("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY).etag();
    assertThat(api.cancel(cancelled).status()).isEqualTo(200);

    Api.Response stale = putIfMatch("SKU-1", 150, read);

    assertThat(stale.status()).as("the close gave 2 units back after the read (V24: not on the row): " + stale.body())
        .isEqualTo(412);
    assertThat(api.stock("SKU-1").getMap()).isEqualTo(Map.of("sku", "SKU-1", "available", 100, "reserved", 0));
  }

  /**
   * A close counts the units it gives back apart from the inventory row (V24), and creates take them again: the row's
   * own {@code available} goes below zero, while the stock, each create's check and each admin change count them.
   */
  @Test
  void unitsAClosedOrderGaveBackAreSoldAgainAndCountedByEveryChange() {
    api.setStock("LAST", 2);
    assertThat(api.cancel(create("u-1", 600, "LAST", 2).getString("id")).status()).isEqualTo(200);
    String kept = create("u-2", 600, "LAST", 1).getString("id");
    create("u-3", 600, "LAST", 1);
    Api.Response soldOut = api.createOrder(UUID.randomUUID().toString(), orderBody("u-4", 600, "LAST", 1));
    assertThat(soldOut.code()).as(soldOut.body()).isEqualTo("insufficient_stock");
    assertThat(api.stock("LAST").getMap()).isEqualTo(Map.of("sku", "LAST", "available", 0, "reserved", 2));
    assertThat(Sql.count("SELECT available FROM inventory WHERE sku = 'LAST'"))
        .as("the row's own figure: the 2 units given back are counted on a stripe").isEqualTo(-2);
    assertThat(api.adjustStock("LAST", -1, "correction-1").code()).isEqualTo("stock_out_of_range");

    assertThat(api.adjustStock("LAST", 3, "restock-1").json().getLong("available")).isEqualTo(3);
    Api.Response set = putIfMatch("LAST", 5, api.get("/v1/admin/inventory/LAST", Api.ADMIN_KEY).etag());
    assertThat(set.status()).as(set.body()).isEqualTo(200);
    assertThat(set.json().getMap()).isEqualTo(Map.of("sku", "LAST", "available", 5, "reserved", 2));
    assertThat(api.cancel(kept).status()).isEqualTo(200);
    assertThat(api.stock("LAST").getMap()).isEqualTo(Map.of("sku", "LAST", "available", 6, "reserved", 1));
    assertThat(Sql.rows("SELECT available_before, available_after FROM inventory_log WHERE sku = 'LAST' "
        + "AND available_before IS NOT NULL ORDER BY id"))
        .as("the log shows the stock's figures, not the row's").containsExactly(
            Map.of("available_before", 0L, "available_after", 3L),
            Map.of("available_before", 3L, "available_after", 5L));
  }

  @Test
  void aSetWaitingBehindAnOrderIsRefusedOnceTheOrderCommits() {
    api.setStock("SKU-1", 100);
    String read = api.get("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY).etag();
    CompletableFuture<Api.Response> order;
    CompletableFuture<Api.Response> set;
    try (StockRowLock held = StockRowLock.hold("SKU-1")) {
      order = api.createOrderAsync(UUID.randomUUID().toString(), orderBody("u-1", 600, "SKU-1", 2));
      awaitTransactionsWaitingForALock(1);
      set = api.sendAsync(putIfMatchRequest("SKU-1", 150, read));
      awaitTransactionsWaitingForALock(2);
    }
    assertThat(order.join().status()).isEqualTo(201);
    Api.Response refused = set.join();
    assertThat(refused.status()).as("the version it read moved while it waited: " + refused.body()).isEqualTo(412);
    assertThat(api.stock("SKU-1").getMap()).isEqualTo(Map.of("sku", "SKU-1", "available", 98, "reserved", 2));
  }

  private static void awaitTransactionsWaitingForALock(int count) {
    Await.until(count + " transactions waiting for a lock", Duration.ofSeconds(30), () -> Sql.count(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()") >= count);
  }

  @Test
  void aSetWithoutIfMatchOnlyCreates() {
    api.setStock("SKU-1", 100);
    Api.Response blind = api.put("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY, "{\"available\":7}");
    assertThat(blind.status()).as(blind.body()).isEqualTo(428);
    assertThat(blind.code()).isEqualTo("precondition_required");
    assertThat(api.stock("SKU-1").getLong("available")).isEqualTo(100);
    Api.Response anyVersion = putIfMatch("SKU-1", 7, "*");
    assertThat(anyVersion.status()).isEqualTo(200);
    assertThat(anyVersion.json().getLong("available")).isEqualTo(7);
  }

  @Test
  void everyChangeOfAvailableGivesTheRowANewVersion() {
    api.setStock("SKU-1", 100);
    List<String> versions = new ArrayList<>();
    Runnable read = () -> versions.add(api.get("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY).etag());
    read.run();
    String paid = create("u-1", 600, "SKU-1", 1).getString("id");
    read.run();
    assertThat(api.pay(paid).status()).isEqualTo(200);
    read.run();
    String cancelled = create("u-2", 600, "SKU-1", 1).getString("id");
    read.run();
    assertThat(api.cancel(cancelled).status()).isEqualTo(200);
    read.run();
    assertThat(api.adjustStock("SKU-1", 5, "restock-1").status()).isEqualTo(200);
    read.run();
    assertThat(api.post("/v1/admin/reconcile", Api.ADMIN_KEY).status()).isEqualTo(200);
    read.run();
    assertThat(versions.get(2)).as("a pay leaves the row alone (V23): available did not move")
        .isEqualTo(versions.get(1));
    assertThat(List.of(versions.get(0), versions.get(1), versions.get(3), versions.get(4), versions.get(5)))
        .as("create, create, cancel, adjust: each a new version").doesNotHaveDuplicates();
    assertThat(versions.get(6)).as("a read changes nothing").isEqualTo(versions.get(5));
  }

  @Test
  void concurrentAdjustsAndOrdersNeverLoseAnUpdate() {
    api.setStock("HOT", 100);
    List<CompletableFuture<Api.Response>> adjusts = IntStream.range(0, 50)
        .mapToObj(i -> api.adjustStockAsync("HOT", 1, "restock-" + i)).toList();
    List<CompletableFuture<Api.Response>> creates = IntStream.range(0, 20)
        .mapToObj(i -> api.createOrderAsync(UUID.randomUUID().toString(), orderBody("buyer-" + i, 600, "HOT", 1))).toList();
    assertThat(adjusts.stream().map(CompletableFuture::join)).allSatisfy(r -> assertThat(r.status()).as(r.body()).isEqualTo(200));
    assertThat(creates.stream().map(CompletableFuture::join)).allSatisfy(r -> assertThat(r.status()).as(r.body()).isEqualTo(201));
    assertThat(api.stock("HOT").getMap()).isEqualTo(Map.of("sku", "HOT", "available", 100 + 50 - 20, "reserved", 20));
    assertThat(Sql.count("SELECT count(*) FROM inventory_log WHERE sku = 'HOT' AND operation = 'ADJUST'")).isEqualTo(50);
  }

  @Test
  void aRetriedAdjustCountsOnce() {
    api.setStock("SKU-1", 100);
    Api.Response first = api.adjustStock("SKU-1", 10, "restock-7");
    Api.Response retried = api.adjustStock("SKU-1", 10, "restock-7");
    assertThat(first.status()).isEqualTo(200);
    assertThat(first.etag()).isNotNull();
    assertThat(retried.status()).isEqualTo(200);
    assertThat(retried.json()).isEqualTo(first.json());
    assertThat(retried.etag()).as("a replay's row may have moved on: no version").isNull();
    Api.Response reused = api.adjustStock("SKU-1", 11, "restock-7");
    assertThat(reused.status()).isEqualTo(422);
    assertThat(reused.code()).isEqualTo("idempotency_key_reused");
    List<Api.Response> together = IntStream.range(0, 10).mapToObj(i -> api.adjustStockAsync("SKU-1", 3, "restock-8")).toList()
        .stream().map(CompletableFuture::join).toList();
    assertThat(together).allSatisfy(r -> assertThat(r.status() == 200 || "request_in_progress".equals(r.code())).as(r.body()).isTrue());
    assertThat(api.stock("SKU-1").getLong("available")).isEqualTo(113);
    assertThat(Sql.count("SELECT count(*) FROM inventory_log WHERE operation = 'ADJUST'")).isEqualTo(2);
  }

  @Test
  void anAdjustOutOfRangeIsRefusedAndChangesNothing() {
    api.setStock("SKU-1", 5);
    create("u-1", 600, "SKU-1", 2);
    Api.Response belowZero = api.adjustStock("SKU-1", -4, "correction-1");
    assertThat(belowZero.status()).isEqualTo(409);
    assertThat(belowZero.code()).isEqualTo("stock_out_of_range");
    Api.Response aboveCeiling = api.adjustStock("SKU-1", 1_000_000_000_000L, "restock-1");
    assertThat(aboveCeiling.status()).isEqualTo(409);
    assertThat(aboveCeiling.code()).isEqualTo("stock_out_of_range");
    assertThat(api.adjustStock("NO-SUCH-SKU", 1, "restock-2").code()).isEqualTo("inventory_not_found");
    assertThat(api.stock("SKU-1").getMap()).isEqualTo(Map.of("sku", "SKU-1", "available", 3, "reserved", 2));
    assertThat(Sql.count("SELECT count(*) FROM inventory_log WHERE operation = 'ADJUST'")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM idempotency_keys")).as("only the order's key").isEqualTo(1);
    Api.Response retried = api.adjustStock("SKU-1", -3, "correction-1");
    assertThat(retried.status()).as("a refused adjust stored nothing: its key runs anew").isEqualTo(200);
    assertThat(retried.json().getLong("available")).isZero();
  }

  @Test
  void theLogHoldsEveryAdminChangeNewestFirst() {
    assertThat(api.put("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY, "{\"available\":100}").status()).isEqualTo(200);
    assertThat(api.adjustStock("SKU-1", 5, "restock-1").status()).isEqualTo(200);
    create("u-1", 600, "SKU-1", 4);
    assertThat(api.adjustStock("SKU-1", -3, "correction-1").status()).isEqualTo(200);
    assertThat(putIfMatch("SKU-1", 50, api.get("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY).etag()).status()).isEqualTo(200);

    Api.Response log = api.get("/v1/admin/inventory/SKU-1/log", Api.ADMIN_KEY);

    assertThat(log.status()).isEqualTo(200);
    List<Map<String, Object>> changes = log.jsonArray().stream().map(change -> {
      Map<String, Object> fields = new HashMap<>(((JsonObject) change).getMap());
      assertThat(fields.remove("at")).isNotNull();
      return fields;
    }).toList();
    assertThat(changes).containsExactly(
        change("SET", 98, 50),
        change("ADJUST", 101, 98),
        change("ADJUST", 100, 105),
        change("SET", null, 100));
    assertThat(api.get("/v1/admin/inventory/SKU-1/log?limit=1", Api.ADMIN_KEY).jsonArray()).hasSize(1);
    assertThat(api.get("/v1/admin/inventory/NO-SUCH-SKU/log", Api.ADMIN_KEY).code()).isEqualTo("inventory_not_found");
  }

  private static Map<String, Object> change(String operation, Integer before, int after) {
    Map<String, Object> change = new HashMap<>();
    change.put("client", "dev-admin");
    change.put("operation", operation);
    change.put("availableBefore", before);
    change.put("availableAfter", after);
    change.put("delta", after - (before == null ? 0 : before));
    return change;
  }

  private Api.Response putIfMatch(String sku, long available, String etag) {
    return api.send(putIfMatchRequest(sku, available, etag));
  }

  private HttpRequest.Builder putIfMatchRequest(String sku, long available, String etag) {
    return api.request("PUT", "/v1/admin/inventory/" + sku, Api.ADMIN_KEY, new JsonObject().put("available", available).encode())
        .header("If-Match", etag);
  }
}
