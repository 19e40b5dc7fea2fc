package ordertimeout.http;

import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** API clients (shops) see only their own orders; idempotency keys and the unpaid cap are per client. */
class ClientIsolationTest extends ServiceTestBase {
  private static final String SHOP_A = "shop-a-secret-key";
  private static final String SHOP_B = "shop-b-secret-key";

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_AUTH_KEYS", "[{key: " + SHOP_A + ", role: user, client: shop-a}, {key: " + SHOP_B + ", role: user, client: shop-b},"
            + " {key: " + Api.ADMIN_KEY + ", role: admin, client: ops}]",
        "OT_ORDERS_MAX_UNPAID_PER_USER", "1");
  }

  @Test
  void anotherClientsOrderIsNotFoundAndCannotBeChanged() {
    api.setStock("SKU-1", 10);
    Api shopA = api.as(SHOP_A);
    Api shopB = api.as(SHOP_B);
    var created = shopA.createOrder("same-key", orderBody("u-1", 600, "SKU-1", 1));
    assertThat(created.status()).isEqualTo(201);
    String id = created.json().getString("id");

    assertThat(shopB.order(id).code()).isEqualTo("order_not_found");
    assertThat(shopB.pay(id).code()).isEqualTo("order_not_found");
    assertThat(shopB.cancel(id).code()).isEqualTo("order_not_found");
    assertThat(shopA.order(id).json().getString("status")).as("untouched").isEqualTo("UNPAID");
    assertThat(api.get("/v1/orders/" + id, Api.ADMIN_KEY).status()).as("admins see every order").isEqualTo(200);

    var otherShopSameKey = shopB.createOrder("same-key", orderBody("u-1", 600, "SKU-1", 2));
    assertThat(otherShopSameKey.status()).as("keys and users are each client's own").isEqualTo(201);
    assertThat(shopA.createOrder("k-2", orderBody("u-1", 600, "SKU-1", 1)).code()).isEqualTo("too_many_unpaid_orders");
    assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(2);
    assertThat(shopA.pay(id).status()).isEqualTo(200);
  }
}
