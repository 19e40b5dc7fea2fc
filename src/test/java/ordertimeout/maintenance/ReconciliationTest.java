package ordertimeout.maintenance;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * POST /v1/admin/reconcile against the real service: it finds stock differences made behind the
 * service's back, changes nothing unless asked to repair, repairs in one go, and reports unpaid orders
 * the sweep has not closed. The sweep is slowed to once an hour so that an aged order stays overdue.
 */
class ReconciliationTest extends ServiceTestBase {
  private static final String RECONCILE = "/v1/admin/reconcile";

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_SWEEP_INTERVAL_SECONDS", "3600", "OT_SWEEP_GRACE_SECONDS", "2");
  }

  private Api.Response reconcile(String key, String body) {
    return api.send(api.request("POST", RECONCILE, key, body));
  }

  private JsonObject reconcileOk(String body) {
    Api.Response response = reconcile(Api.ADMIN_KEY, body);
    assertThat(response.status()).as(response.body()).isEqualTo(200);
    return response.json();
  }

  private String metrics() {
    return api.get("/metrics", null).body();
  }

  @Test
  void findsReportsAndOnRequestRepairsAReservedCountThatDrifted() {
    api.setStock("SKU-1", 10);
    api.setStock("SKU-2", 10);
    api.setStock("SKU-3", 10);
    create("u-1", 3600, "SKU-1", 2);
    create("u-1", 3600, "SKU-3", 1);
    String sold = create("u-2", 3600, "SKU-1", 4).getString("id");
    assertThat(api.pay(sold).status()).as("4 units sold: counted on a stripe of inventory_paid (V23)").isEqualTo(200);
    Sql.execute("UPDATE inventory SET reserved = reserved + 5 WHERE sku = 'SKU-1'");
    Sql.execute("UPDATE inventory SET reserved = reserved + 3 WHERE sku = 'SKU-2'");

    JsonObject report = reconcileOk(null);
    assertThat(report.getLong("skusChecked")).isEqualTo(3);
    assertThat(report.getJsonArray("skuDifferences")).isEqualTo(new JsonArray()
        .add(new JsonObject().put("sku", "SKU-1").put("reserved", 7).put("expected", 2))
        .add(new JsonObject().put("sku", "SKU-2").put("reserved", 3).put("expected", 0)));
    assertThat(report.getLong("repaired")).isZero();
    assertThat(report.getLong("overdueUnpaid")).isZero();
    assertThat(report.getValue("oldestOverdue")).isNull();
    assertThat(Instant.parse(report.getString("checkedAt"))).isBeforeOrEqualTo(Instant.now().plusSeconds(5));

    assertThat(api.stock("SKU-1").getLong("reserved")).as("nothing changed without repair").isEqualTo(7);
    assertThat(api.stock("SKU-2").getLong("reserved")).isEqualTo(3);
    assertThat(api.stats().getJsonObject("reconciliation").getLong("skuDifferences")).isEqualTo(2);
    assertThat(metrics()).contains("ordertimeout_reconciliation_sku_differences 2.0");

    assertThat(reconcileOk("{}").getLong("repaired")).as("an empty object is repair false").isZero();
    assertThat(reconcileOk("{\"repair\": false}").getLong("repaired")).isZero();
    assertThat(api.stock("SKU-1").getLong("reserved")).isEqualTo(7);

    JsonObject repaired = reconcileOk("{\"repair\": true}");
    assertThat(repaired.getJsonArray("skuDifferences")).hasSize(2);
    assertThat(repaired.getLong("repaired")).isEqualTo(2);
    assertThat(api.stock("SKU-1")).as("the units paid count")
        .isEqualTo(new JsonObject().put("sku", "SKU-1").put("available", 4).put("reserved", 2));
    assertThat(api.stock("SKU-2")).as("available is never touched")
        .isEqualTo(new JsonObject().put("sku", "SKU-2").put("available", 10).put("reserved", 0));
    assertThat(api.stock("SKU-3").getLong("reserved")).isEqualTo(1);

    JsonObject again = reconcileOk(null);
    assertThat(again.getJsonArray("skuDifferences")).isEmpty();
    assertThat(again.getLong("repaired")).isZero();
    assertThat(metrics()).contains("ordertimeout_reconciliation_sku_differences 0.0");
    assertThat(api.stats().getJsonObject("reconciliation").getLong("repaired")).isGreaterThanOrEqualTo(2);
  }

  @Test
  void reportsUnpaidOrdersOverdueBeyondWhatTheSweepShouldHaveClosedWithoutClosingThem() {
    api.setStock("SKU-1", 10);
    String aged = create("u-1", 3600, "SKU-1", 1).getString("id");
    String older = create("u-1", 3600, "SKU-1", 1).getString("id");
    create("u-1", 3600, "SKU-1", 1);
    // The wheel still holds their original deadlines, and the sweep runs once an hour: nothing closes them.
    Sql.execute("UPDATE orders SET created_at = now() - interval '3 hours', close_at = now() - interval '2 hours' WHERE id = ?",
        Long.parseLong(aged));
    Sql.execute("UPDATE orders SET created_at = now() - interval '4 hours', close_at = now() - interval '3 hours' WHERE id = ?",
        Long.parseLong(older));

    JsonObject report = reconcileOk(null);
    assertThat(report.getLong("overdueUnpaid")).isEqualTo(2);
    assertThat(report.getJsonObject("oldestOverdue").getString("id")).isEqualTo(older);
    Instant closeAt = Instant.parse(report.getJsonObject("oldestOverdue").getString("closeAt"));
    assertThat(closeAt).isBefore(Instant.now().minusSeconds(2 * 3600));
    assertThat(report.getJsonArray("skuDifferences")).isEmpty();
    assertThat(statusOf(aged)).as("reconciliation does not close").isEqualTo("UNPAID");
    assertThat(api.stats().getJsonObject("reconciliation").getLong("overdueUnpaid")).isEqualTo(2);
    assertThat(metrics()).contains("ordertimeout_reconciliation_overdue_unpaid 2.0");
  }

  @Test
  void repairsWhileOrdersOfTheSameSkusAreCreatedAndClosedWithoutDeadlockOrNewDrift() {
    api.setStock("SKU-A", 100_000);
    api.setStock("SKU-B", 100_000);
    long repaired = 0;
    List<CompletableFuture<Api.Response>> creates = new ArrayList<>();
    for (int wave = 0; wave < 4; wave++) {
      List<CompletableFuture<Api.Response>> sent = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        sent.add(api.createOrderAsync(UUID.randomUUID().toString(), i % 2 == 0
            ? orderBody("u-" + i, 1, "SKU-A", 1, "SKU-B", 2)
            : orderBody("u-" + i, 1, "SKU-B", 1, "SKU-A", 3)));
      }
      if (wave == 1) {
        Sql.execute("UPDATE inventory SET reserved = reserved + 5 WHERE sku = 'SKU-A'");
      }
      repaired += reconcileOk("{\"repair\": true}").getLong("repaired");
      sent.forEach(CompletableFuture::join);
      creates.addAll(sent);
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") > 0 || repaired == 0) {
      assertThat(System.nanoTime()).as("orders closed and the drift repaired in time").isLessThan(deadline);
      repaired += reconcileOk("{\"repair\": true}").getLong("repaired");
    }
    for (CompletableFuture<Api.Response> create : creates) {
      assertThat(create.join().status()).as(create.join().body()).isEqualTo(201);
    }
    assertThat(repaired).as("only the injected drift needed repair").isEqualTo(1);
    // The drift was added to reserved only, and the repair leaves available alone: every unit comes back.
    assertThat(api.stock("SKU-A")).isEqualTo(new JsonObject().put("sku", "SKU-A").put("available", 100_000).put("reserved", 0));
    assertThat(reconcileOk(null).getJsonArray("skuDifferences")).isEmpty();
  }

  /**
   * Pays do not lock the inventory row a repair locks (migration V23): they commit their order and their stripe of
   * inventory_paid while the repair runs. The repair must still see each pay whole or not at all, so that it sets
   * right only the injected drift and no pay is counted twice or lost.
   */
  @Test
  void repairsWhileOrdersOfTheSameSkuArePaidWithoutNewDrift() {
    api.setStock("SKU-P", 100_000);
    long repaired = 0;
    List<CompletableFuture<Api.Response>> pays = new ArrayList<>();
    for (int wave = 0; wave < 4; wave++) {
      List<CompletableFuture<Api.Response>> sent = new ArrayList<>();
      for (String id : api.createOrders(50, 3600, "SKU-P")) {
        sent.add(api.postAsync("/v1/orders/" + id + "/pay", Api.USER_KEY));
      }
      if (wave == 1) {
        Sql.execute("UPDATE inventory SET reserved = reserved + 5 WHERE sku = 'SKU-P'");
      }
      repaired += reconcileOk("{\"repair\": true}").getLong("repaired");
      sent.forEach(CompletableFuture::join);
      pays.addAll(sent);
    }
    for (CompletableFuture<Api.Response> pay : pays) {
      assertThat(pay.join().status()).as(pay.join().body()).isEqualTo(200);
    }
    repaired += reconcileOk("{\"repair\": true}").getLong("repaired");
    assertThat(repaired).as("only the injected drift needed repair").isEqualTo(1);
    assertThat(api.stock("SKU-P")).as("200 units sold, none reserved")
        .isEqualTo(new JsonObject().put("sku", "SKU-P").put("available", 99_800).put("reserved", 0));
    assertThat(reconcileOk(null).getJsonArray("skuDifferences")).isEmpty();
  }

  @Test
  void badBodiesAnswer400WithTheirCodeAndChangeNothing() {
    api.setStock("SKU-1", 10);
    Sql.execute("UPDATE inventory SET reserved = 4 WHERE sku = 'SKU-1'");
    Map<String, String> cases = Map.of(
        "{", "malformed_json",
        "[true]", "malformed_json",
        "true", "malformed_json",
        "{\"repair\": true, \"force\": true}", "unknown_field",
        "{\"repair\": \"yes\"}", "invalid_field",
        "{\"repair\": 1}", "invalid_field",
        "{\"repair\": null}", "invalid_field");
    cases.forEach((body, code) -> {
      Api.Response response = reconcile(Api.ADMIN_KEY, body);
      assertThat(response.status()).as(body).isEqualTo(400);
      assertThat(response.contentType()).startsWith("application/problem+json");
      assertThat(response.code()).as(body).isEqualTo(code);
    });
    assertThat(api.stock("SKU-1").getLong("reserved")).isEqualTo(4);
    assertThat(reconcileOk("{\"repair\": true}").getLong("repaired")).isEqualTo(1);
  }

  @Test
  void needsAnAdminKey() {
    Api.Response user = reconcile(Api.USER_KEY, "{\"repair\": true}");
    assertThat(user.status()).isEqualTo(403);
    assertThat(user.code()).isEqualTo("forbidden");
    assertThat(reconcile(null, null).status()).isEqualTo(401);
  }
}
