package ordertimeout.support;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInstance;

import java.time.Instant;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the real service once per test class on the shared test database; every test starts from
 * empty tables (and an empty {@link StockLedger}) and ends with the invariants checked.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class ServiceTestBase {
  protected TestService service;
  protected Api api;
  private Instant serviceStarted;

  /** OT_* overrides for this class's service. */
  protected Map<String, String> overrides() {
    return Map.of();
  }

  @BeforeAll
  void startService() {
    // The class before may have left overdue orders (ReconciliationTest does, its sweep slowed): a service started on
    // them would close them before this class's first reset, into its metrics and its stats.
    TestDatabase.resetForANewNode();
    service = TestService.start(overrides());
    serviceStarted = Instant.now();
    api = service.api();
  }

  @AfterAll
  void stopService() {
    if (service != null) {
      service.close();
    }
  }

  @BeforeEach
  void emptyTables() {
    TestDatabase.reset();
  }

  /** With the service still running: no order left overdue, besides the invariants of the data. */
  @AfterEach
  void invariantsHold() {
    Invariants.assertHold(service.config(), serviceStarted);
  }

  protected static JsonObject orderBody(String userId, int timeoutSeconds, Object... skuAndQty) {
    JsonArray items = new JsonArray();
    for (int i = 0; i < skuAndQty.length; i += 2) {
      items.add(new JsonObject().put("sku", skuAndQty[i]).put("qty", skuAndQty[i + 1]));
    }
    return new JsonObject().put("userId", userId).put("items", items).put("timeoutSeconds", timeoutSeconds);
  }

  /** Creates an order with a fresh idempotency key and returns it; fails the test unless 201. */
  protected JsonObject create(String userId, int timeoutSeconds, Object... skuAndQty) {
    Api.Response response = api.createOrder(UUID.randomUUID().toString(), orderBody(userId, timeoutSeconds, skuAndQty));
    assertThat(response.status()).as(response.body()).isEqualTo(201);
    return response.json();
  }


  protected String statusOf(String id) {
    return api.order(id).json().getString("status");
  }

  /** The sum of a metric's series on /metrics now. */
  protected double metric(String name) {
    return new Prometheus(api.get("/metrics", null).body()).sum(name);
  }
}
