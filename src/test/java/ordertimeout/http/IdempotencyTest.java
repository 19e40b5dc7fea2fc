package ordertimeout.http;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class IdempotencyTest extends ServiceTestBase {

  @Test
  void sameKeyAndBodyReplaysTheStoredResponse() {
    api.setStock("SKU-1", 10);
    JsonObject body = orderBody("u-1", 600, "SKU-1", 2);
    Api.Response first = api.createOrder("key-1", body);
    Api.Response again = api.createOrder("key-1", body);
    assertThat(first.status()).isEqualTo(201);
    assertThat(again.status()).isEqualTo(201);
    assertThat(again.body()).isEqualTo(first.body());
    assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(1);
    assertThat(api.stock("SKU-1").getLong("reserved")).as("reserved once").isEqualTo(2);
    assertThat(api.stats().getLong("idempotentReplays")).isGreaterThanOrEqualTo(1);
  }

  @Test
  void sameKeyWithAnotherBodyIs422AndChangesNothing() {
    api.setStock("SKU-1", 10);
    assertThat(api.createOrder("key-1", orderBody("u-1", 600, "SKU-1", 2)).status()).isEqualTo(201);
    Api.Response reused = api.createOrder("key-1", orderBody("u-1", 600, "SKU-1", 3));
    assertThat(reused.status()).isEqualTo(422);
    assertThat(reused.code()).isEqualTo("idempotency_key_reused");
    assertThat(reused.contentType()).isEqualTo("application/problem+json");
    assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(1);
    assertThat(api.stock("SKU-1").getLong("reserved")).isEqualTo(2);
  }

  @Test
  void keysAreScopedPerClientAndAFailedCreateDoesNotUseTheKey() {
    api.setStock("SKU-1", 1);
    JsonObject tooMuch = orderBody("u-1", 600, "SKU-1", 2);
    assertThat(api.createOrder("key-1", tooMuch).code()).isEqualTo("insufficient_stock");
    api.setStock("SKU-1", 5);
    assertThat(api.createOrder("key-1", tooMuch).status())
        .as("a rejected create stored nothing, so the retry runs anew").isEqualTo(201);
  }

  @Test
  void concurrentDuplicatesCreateExactlyOneOrder() {
    api.setStock("SKU-1", 100);
    JsonObject body = orderBody("u-1", 600, "SKU-1", 1);
    for (int round = 0; round < 5; round++) {
      String key = "dup-" + round;
      List<CompletableFuture<Api.Response>> sent = IntStream.range(0, 16)
          .mapToObj(i -> api.createOrderAsync(key, body)).toList();
      List<Api.Response> responses = sent.stream().map(CompletableFuture::join).toList();
      List<String> createdIds = responses.stream().filter(r -> r.status() == 201).map(r -> r.json().getString("id")).distinct().toList();
      assertThat(createdIds).as("every 201 names the same order").hasSize(1);
      assertThat(responses).allSatisfy(r -> assertThat(r.status() == 201 || "request_in_progress".equals(r.code()))
          .as(r.body()).isTrue());
    }
    assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(5);
    assertThat(api.stock("SKU-1").getLong("reserved")).isEqualTo(5);
  }

  /**
   * The key is stored by the group's last statement, after the order and its reservation: when that insert fails,
   * the create fails and leaves nothing behind (no 201 for an order rolled back, no stock held by it).
   */
  @Test
  void aCreateWhoseKeyCannotBeStoredFailsAndStoresNothing() {
    api.setStock("SKU-1", 10);
    Sql.execute("ALTER TABLE idempotency_keys ADD CONSTRAINT refuse_one_key CHECK (key <> 'refused-key') NOT VALID");
    try {
      Api.Response refused = api.createOrder("refused-key", orderBody("u-1", 600, "SKU-1", 2));
      assertThat(refused.status()).as(refused.body()).isGreaterThanOrEqualTo(500);
      assertThat(Sql.count("SELECT count(*) FROM orders")).as("no order stored").isZero();
      assertThat(api.stock("SKU-1").getLong("reserved")).as("nothing reserved").isZero();
    } finally {
      Sql.execute("ALTER TABLE idempotency_keys DROP CONSTRAINT refuse_one_key");
    }
    assertThat(api.createOrder("another-key", orderBody("u-1", 600, "SKU-1", 2)).status())
        .as("the next create, on the same connections").isEqualTo(201);
  }
}
