package ordertimeout.store;

import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

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
  void adminSetsAvailableStock() {
    Api.Response set = api.put("/v1/admin/inventory/NEW-SKU", Api.ADMIN_KEY, "{\"available\":100}");
    assertThat(set.status()).isEqualTo(200);
    assertThat(set.json().getMap()).isEqualTo(Map.of("sku", "NEW-SKU", "available", 100, "reserved", 0));
    create("u-1", 600, "NEW-SKU", 10);
    Api.Response lowered = api.put("/v1/admin/inventory/NEW-SKU", Api.ADMIN_KEY, "{\"available\":5}");
    assertThat(lowered.json().getLong("available")).isEqualTo(5);
    assertThat(lowered.json().getLong("reserved")).as("reservations stay").isEqualTo(10);
  }
}
