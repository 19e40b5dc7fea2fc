package ordertimeout.limit;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The per-client caps against hoarding stock (clients.*): unpaid orders, units in them and the timeout ceiling,
 * whatever user ids the client names; every way an order stops being unpaid gives its room back, and the counts
 * behind the caps stay exact (the invariants compare them with the orders after each test).
 */
class ClientCapsTest extends ServiceTestBase {
  private static final String CAPPED_KEY = "capped-client-key";
  private static final String CROWDED_KEY = "crowded-client-key";
  private static final int CROWDED_CAP = 30;

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_AUTH_KEYS", "[{key: dev-user-key, role: user, client: dev-user}, {key: dev-admin-key, role: admin, client: dev-admin},"
            + " {key: " + CAPPED_KEY + ", role: user, client: capped}, {key: " + CROWDED_KEY + ", role: user, client: crowded}]",
        "OT_CLIENTS_OVERRIDES", "{capped: {maxUnpaidOrders: 3, maxReservedUnits: 100, maxTimeoutSeconds: 3600},"
            + " crowded: {maxUnpaidOrders: " + CROWDED_CAP + ", createsPerSecond: 0}}");
  }

  private Api capped() {
    return api.as(CAPPED_KEY);
  }

  private static Api.Response create(Api as, String userId, int timeoutSeconds, Object... skuAndQty) {
    return as.createOrder(UUID.randomUUID().toString(), orderBody(userId, timeoutSeconds, skuAndQty));
  }

  private String createdId(Api as, String userId, int timeoutSeconds, Object... skuAndQty) {
    Api.Response response = create(as, userId, timeoutSeconds, skuAndQty);
    assertThat(response.status()).as(response.body()).isEqualTo(201);
    return response.json().getString("id");
  }

  @Test
  void theUnpaidCapCountsEveryUserOfTheClientAndPayCancelAndCloseFreeRoom() {
    api.setStock("SKU-C", 1000);
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ids.add(createdId(capped(), "user-" + i, 600, "SKU-C", 1));
    }
    Api.Response refused = create(capped(), "a-fresh-user", 600, "SKU-C", 1);
    assertThat(refused.status()).isEqualTo(429);
    assertThat(refused.code()).isEqualTo("client_unpaid_cap");
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE client = 'capped'")).as("nothing stored").isEqualTo(3);
    assertThat(api.stock("SKU-C").getLong("reserved")).as("nothing reserved").isEqualTo(3);
    assertThat(createdId(api, "user-0", 600, "SKU-C", 1)).as("another client is not held back").isNotNull();

    assertThat(capped().pay(ids.get(0)).status()).isEqualTo(200);
    String fourth = createdId(capped(), "user-3", 600, "SKU-C", 1);
    assertThat(create(capped(), "user-4", 600, "SKU-C", 1).code()).isEqualTo("client_unpaid_cap");

    assertThat(capped().cancel(ids.get(1)).status()).isEqualTo(200);
    createdId(capped(), "user-4", 600, "SKU-C", 1);
    assertThat(create(capped(), "user-5", 600, "SKU-C", 1).code()).isEqualTo("client_unpaid_cap");

    assertThat(api.adminClose(fourth).status()).isEqualTo(200);
    createdId(capped(), "user-5", 600, "SKU-C", 1);
    assertThat(create(capped(), "user-6", 600, "SKU-C", 1).code()).isEqualTo("client_unpaid_cap");
  }

  @Test
  void theUnitsCapTakesAnOrderThatReachesItExactlyAndRefusesOneUnitMore() {
    api.setStock("SKU-A", 1000);
    api.setStock("SKU-B", 1000);
    createdId(capped(), "u-1", 600, "SKU-A", 60, "SKU-B", 30);
    Api.Response refused = create(capped(), "u-2", 600, "SKU-A", 11);
    assertThat(refused.status()).isEqualTo(429);
    assertThat(refused.code()).isEqualTo("client_units_cap");
    assertThat(refused.json().getString("detail")).contains("90").contains("100");
    assertThat(api.stock("SKU-A").getLong("reserved")).as("nothing reserved").isEqualTo(60);
    createdId(capped(), "u-2", 600, "SKU-A", 10);
  }

  @Test
  void aTimeoutOverTheClientsCeilingIsRefusedAndTheDefaultCeilingIsADay() {
    api.setStock("SKU-T", 100);
    Api.Response overOwn = create(capped(), "u-1", 3601, "SKU-T", 1);
    assertThat(overOwn.status()).isEqualTo(400);
    assertThat(overOwn.code()).isEqualTo("client_timeout_ceiling");
    createdId(capped(), "u-1", 3600, "SKU-T", 1);
    assertThat(create(api, "u-1", 86_401, "SKU-T", 1).code()).isEqualTo("client_timeout_ceiling");
    createdId(api, "u-1", 86_400, "SKU-T", 1);
    assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(2);
  }

  @Test
  void ordersClosedAtTheirDeadlineGiveTheirRoomBack() {
    api.setStock("SKU-D", 1000);
    for (int i = 0; i < 3; i++) {
      createdId(capped(), "user-" + i, 1, "SKU-D", 30);
    }
    assertThat(create(capped(), "user-3", 600, "SKU-D", 1).code()).isEqualTo("client_unpaid_cap");
    Await.until("the three closed at their deadline", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
    createdId(capped(), "user-3", 600, "SKU-D", 100);
  }

  @Test
  void concurrentCreatesOfOneClientOnTwoNodesNeverPassItsCap() {
    api.setStock("SKU-X", 10_000);
    Map<String, String> secondNode = new HashMap<>(overrides());
    secondNode.put("OT_NODE_ID", "2"); // each node its own id: the id is leased
    try (TestService second = TestService.start(secondNode)) {
      Api[] nodes = {api.as(CROWDED_KEY), second.api().as(CROWDED_KEY)};
      List<CompletableFuture<Api.Response>> answers = new ArrayList<>();
      for (int i = 0; i < 4 * CROWDED_CAP; i++) {
        JsonObject body = orderBody("user-" + i, 600, "SKU-X", 1);
        answers.add(nodes[i % 2].createOrderAsync(UUID.randomUUID().toString(), body));
      }
      List<Api.Response> responses = answers.stream().map(CompletableFuture::join).toList();
      assertThat(responses.stream().filter(r -> r.status() == 201).count()).isEqualTo(CROWDED_CAP);
      assertThat(responses.stream().filter(r -> r.status() != 201).map(Api.Response::code).distinct().toList())
          .containsExactly("client_unpaid_cap");
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE client = 'crowded'")).isEqualTo(CROWDED_CAP);
    }
  }

  @Test
  void theCountsStayExactThroughCloseBatchesOfSeveralClients() {
    api.setStock("SKU-S", 10_000);
    CompletableFuture<List<String>> crowded = CompletableFuture.supplyAsync(() -> api.as(CROWDED_KEY).createOrders(CROWDED_CAP, 2, "SKU-S"));
    List<String> own = api.createOrders(300, 2, "SKU-S");
    assertThat(crowded.join()).hasSize(CROWDED_CAP);
    api.pay(own.get(own.size() - 1));
    Await.until("every order closed or paid", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED' AND client = 'crowded'")).isEqualTo(CROWDED_CAP);
    assertThat(Sql.count("SELECT sum(unpaid) FROM client_holdings")).isZero();
    assertThat(Sql.count("SELECT sum(units) FROM client_holdings")).isZero();
  }

  @Test
  void reconciliationReportsCountsThatAreOffAndRepairsThem() {
    api.setStock("SKU-R", 100);
    createdId(capped(), "u-1", 600, "SKU-R", 4);
    Sql.execute("UPDATE client_holdings SET unpaid = unpaid + 2, units = units - 1 WHERE client = 'capped'"); // its one row

    JsonObject report = api.send(api.request("POST", "/v1/admin/reconcile", Api.ADMIN_KEY, null)).json();
    assertThat(report.getLong("clientDifferencesTotal")).isEqualTo(1);
    assertThat(report.getJsonArray("clientDifferences").getJsonObject(0).getMap())
        .containsEntry("client", "capped").containsEntry("unpaid", 3).containsEntry("expectedUnpaid", 1)
        .containsEntry("units", 3).containsEntry("expectedUnits", 4);
    assertThat(report.getInteger("repairedClients")).as("a check alone repairs nothing").isZero();

    JsonObject repaired = api.send(api.request("POST", "/v1/admin/reconcile", Api.ADMIN_KEY, "{\"repair\":true}")).json();
    assertThat(repaired.getInteger("repairedClients")).isEqualTo(1);
    assertThat(Sql.count("SELECT sum(unpaid) FROM client_holdings WHERE client = 'capped'")).isEqualTo(1);
    assertThat(Sql.count("SELECT sum(units) FROM client_holdings WHERE client = 'capped'")).isEqualTo(4);
  }
}
