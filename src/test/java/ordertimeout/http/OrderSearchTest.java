package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import org.junit.jupiter.api.Test;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** GET /v1/admin/orders and GET /v1/orders: each filter, keyset pages without duplicates or gaps, client scoping, bad input. */
class OrderSearchTest extends ServiceTestBase {
  private static final String SHOP_B = "shop-b-test-key";

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_AUTH_KEYS", "[{key: dev-user-key, role: user, client: dev-user}, {key: dev-admin-key, role: admin, client: dev-admin},"
        + " {key: " + SHOP_B + ", role: user, client: shop-b}]");
  }

  @Test
  void eachFilterAnswersExactlyItsOrders() {
    api.setStock("SKU-A", 1000);
    api.setStock("SKU-B", 1000);
    List<String> shortOnes = new ArrayList<>();
    for (int i = 0; i < 4; i++) shortOnes.add(create("u-1", 600, "SKU-A", 1).getString("id"));
    Instant between = Instant.now();
    List<String> longOnes = new ArrayList<>();
    for (int i = 0; i < 3; i++) longOnes.add(create("u-2", 3600, "SKU-B", 1).getString("id"));
    String paid = create("u-2", 3600, "SKU-A", 2, "SKU-B", 1).getString("id");
    assertThat(api.pay(paid).status()).isEqualTo(200);
    String cancelled = shortOnes.get(0);
    assertThat(api.cancel(cancelled).status()).isEqualTo(200);
    String otherClients = api.as(SHOP_B).createOrder(UUID.randomUUID().toString(), orderBody("u-1", 600, "SKU-A", 1)).json().getString("id");

    assertThat(search("")).containsExactlyInAnyOrderElementsOf(all(shortOnes, longOnes, List.of(paid, otherClients)));
    assertThat(search("status=PAID")).containsExactly(paid);
    assertThat(search("status=CLOSED")).containsExactly(cancelled);
    assertThat(search("client=shop-b")).containsExactly(otherClients);
    assertThat(search("client=dev-user&userId=u-1")).containsExactlyInAnyOrderElementsOf(shortOnes);
    assertThat(search("userId=u-1")).containsExactlyInAnyOrderElementsOf(all(shortOnes, List.of(otherClients)));
    assertThat(search("sku=SKU-B")).containsExactlyInAnyOrderElementsOf(all(longOnes, List.of(paid)));
    assertThat(search("status=UNPAID&sku=SKU-A")).containsExactlyInAnyOrderElementsOf(all(shortOnes.subList(1, 4), List.of(otherClients)));
    Instant in20Minutes = Instant.now().plusSeconds(1200);
    assertThat(search("status=UNPAID&dueBefore=" + q(in20Minutes)))
        .containsExactlyInAnyOrderElementsOf(all(shortOnes.subList(1, 4), List.of(otherClients)));
    assertThat(search("status=UNPAID&dueAfter=" + q(in20Minutes))).containsExactlyInAnyOrderElementsOf(longOnes);
    assertThat(search("createdBefore=" + q(between))).containsExactlyInAnyOrderElementsOf(shortOnes);
    assertThat(search("createdAfter=" + q(between) + "&client=dev-user")).containsExactlyInAnyOrderElementsOf(all(longOnes, List.of(paid)));

    JsonObject page = api.get("/v1/admin/orders?status=PAID", Api.ADMIN_KEY).json();
    assertThat(page.getValue("next")).as("one page only").isNull();
    JsonObject order = page.getJsonArray("orders").getJsonObject(0);
    assertThat(order).as("the orders as GET /v1/orders/{id} answers them").isEqualTo(api.order(paid).json());
  }

  @Test
  void pagesHaveNoDuplicatesOrGapsWhileOrdersArrive() {
    api.setStock("SKU-P", 10_000);
    Set<String> before = new HashSet<>(api.createOrders(53, 600, "SKU-P"));
    List<String> seen = new ArrayList<>();
    String cursor = null;
    int pages = 0;
    do {
      JsonObject page = api.get("/v1/admin/orders?sku=SKU-P&limit=10" + (cursor == null ? "" : "&cursor=" + cursor), Api.ADMIN_KEY).json();
      page.getJsonArray("orders").forEach(o -> seen.add(((JsonObject) o).getString("id")));
      cursor = page.getString("next");
      pages++;
      api.createOrders(7, 600, "SKU-P"); // newer orders arrive between pages
    } while (cursor != null);
    assertThat(pages).isEqualTo(6);
    assertThat(seen).as("no order twice").doesNotHaveDuplicates();
    assertThat(seen).as("every order that was there before the first page").containsAll(before);
    assertThat(seen).as("newest first").isSortedAccordingTo((a, b) -> Long.compare(Long.parseLong(b), Long.parseLong(a)));
  }

  @Test
  void theUserRouteShowsTheCallersClientsOrdersOnly() {
    api.setStock("SKU-U", 1000);
    String mine1 = create("u-1", 600, "SKU-U", 1).getString("id");
    String mine2 = create("u-2", 600, "SKU-U", 1).getString("id");
    Api shopB = api.as(SHOP_B);
    String theirs = shopB.createOrder(UUID.randomUUID().toString(), orderBody("u-1", 600, "SKU-U", 1)).json().getString("id");
    assertThat(api.pay(mine2).status()).isEqualTo(200);

    assertThat(ids(api.get("/v1/orders", Api.USER_KEY).json())).containsExactly(mine2, mine1);
    assertThat(ids(api.get("/v1/orders?userId=u-1", Api.USER_KEY).json())).containsExactly(mine1);
    assertThat(ids(api.get("/v1/orders?status=PAID", Api.USER_KEY).json())).containsExactly(mine2);
    assertThat(ids(shopB.get("/v1/orders?userId=u-1", SHOP_B).json())).containsExactly(theirs);
    assertThat(ids(api.get("/v1/orders?userId=u-1", Api.ADMIN_KEY).json())).as("an admin key sees every client's")
        .containsExactlyInAnyOrder(mine1, theirs);
    assertThat(ids(api.get("/v1/orders?client=shop-b", Api.USER_KEY).json())).as("the user route takes no client filter: ignored")
        .containsExactly(mine2, mine1);
    assertThat(api.get("/v1/admin/orders", Api.USER_KEY).status()).isEqualTo(403);
  }

  @Test
  void badFiltersAnswer400WithTheirCodes() {
    assertCode("/v1/admin/orders?status=LOST", "invalid_filter");
    assertCode("/v1/admin/orders?dueAfter=yesterday", "invalid_filter");
    assertCode("/v1/admin/orders?createdBefore=2026-12-01T09:00:00", "invalid_filter");
    assertCode("/v1/admin/orders?dueAfter=2026-12-02T00:00:00Z&dueBefore=2026-12-01T00:00:00Z", "invalid_filter");
    assertCode("/v1/admin/orders?sku=" + q("SKU 1"), "invalid_filter");
    assertCode("/v1/admin/orders?cursor=bm90LWEtY3Vyc29y", "invalid_cursor");
    assertCode("/v1/admin/orders?cursor=%21%21", "invalid_cursor");
    assertCode("/v1/admin/orders?limit=0", "invalid_field");
    assertCode("/v1/admin/orders?limit=201", "invalid_field");
    assertCode("/v1/orders?status=LOST", "invalid_filter");
  }

  private void assertCode(String path, String code) {
    Api.Response response = api.get(path, path.startsWith("/v1/admin") ? Api.ADMIN_KEY : Api.USER_KEY);
    assertThat(response.status()).as(path + ": " + response.body()).isEqualTo(400);
    assertThat(response.code()).as(path).isEqualTo(code);
  }

  /** Every page of an admin search, its ids in order. */
  private List<String> search(String query) {
    List<String> ids = new ArrayList<>();
    String cursor = null;
    do {
      Api.Response response = api.get("/v1/admin/orders?limit=2&" + query + (cursor == null ? "" : "&cursor=" + cursor), Api.ADMIN_KEY);
      assertThat(response.status()).as(query + ": " + response.body()).isEqualTo(200);
      ids.addAll(ids(response.json()));
      cursor = response.json().getString("next");
    } while (cursor != null);
    assertThat(ids).as(query).doesNotHaveDuplicates();
    return ids;
  }

  private static List<String> ids(JsonObject page) {
    List<String> ids = new ArrayList<>();
    for (Object order : page.getJsonArray("orders", new JsonArray())) ids.add(((JsonObject) order).getString("id"));
    return ids;
  }

  @SafeVarargs
  private static List<String> all(List<String>... lists) {
    List<String> all = new ArrayList<>();
    for (List<String> list : lists) all.addAll(list);
    return all;
  }

  private static String q(Object value) {
    return URLEncoder.encode(value.toString(), StandardCharsets.UTF_8);
  }
}
