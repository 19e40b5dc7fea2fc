package ordertimeout.cluster;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.OwnNode;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.TcpProxy;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The lease on a node id: two running nodes never share one, a lease a dead node left behind is taken once it
 * expires, ids never go back across a restart (a clock stepped back included), and a node that cannot renew its
 * lease stops giving ids until it can. Leases of 3 s; each test has a node id of its own.
 */
class NodeIdLeaseTest {
  private static final long EPOCH = 1_735_689_600_000L; // OrderIds' 2025-01-01T00:00:00Z
  private static final Duration SAFETY = Duration.ofSeconds(60);
  private static final String SKU = "LEASE";

  @BeforeEach
  void emptyTables() {
    TestDatabase.reset();
  }

  @Test
  void aSecondNodeConfiguredWithANodeIdARunningNodeHoldsRefusesToStart() {
    try (TestService first = TestService.start(node(61))) {
      // a start that succeeds against expectation is closed at once, so that no node is left holding the lease
      assertThatThrownBy(() -> TestService.start(node(61)).close())
          .hasStackTraceContaining("node.id 61 is in use by a running node")
          .hasStackTraceContaining("give each node its own node.id");
      first.api().setStock(SKU, 10);
      assertThat(create(first.api()).status()).as("the first node goes on").isEqualTo(201);
    }
    Invariants.assertHold();
  }

  @Test
  void aLeaseADeadNodeLeftIsTakenOnceItExpiresAndIdsStartPastItsHighWaterMarkSkippingATakenOne() {
    long highWater = System.currentTimeMillis() + 3_600_000;
    Sql.execute("""
        INSERT INTO node_leases (node_id, holder, expires_at, id_high_water_millis, renewed_at)
        VALUES (62, 'a-dead-instance', now() + interval '2 seconds', ?, now())
        ON CONFLICT (node_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
          id_high_water_millis = EXCLUDED.id_high_water_millis""", highWater);
    long firstId = id(highWater + 1, 62, 0);
    SeedOrders.insert(SKU, new long[] {firstId}, 600_000, 0, null);
    try (TestService node = TestService.start(node(62))) {
      node.api().setStock(SKU, 10);
      Api.Response created = create(node.api());
      assertThat(created.status()).as(created.body()).isEqualTo(201);
      assertThat(Long.parseLong(created.json().getString("id"))).as("the first id was taken: the next one")
          .isEqualTo(id(highWater + 1, 62, 1));
    }
    assertThat(highWaterOf(62)).as("released with its last millisecond").isEqualTo(highWater + 1);
    Invariants.assertHold();
  }

  @Test
  void aRestartedNodeWhoseClockSteppedBackGoesOnPastItsLastId() {
    long before;
    try (TestService node = TestService.start(node(63))) {
      node.api().setStock(SKU, 10);
      before = Long.parseLong(create(node.api()).json().getString("id"));
    }
    Map<String, String> behind = node(63);
    behind.put("OT_NODE_CLOCK_OFFSET_MILLIS", "-60000");
    try (TestService restarted = TestService.start(behind)) {
      Api.Response created = create(restarted.api());
      assertThat(created.status()).as(created.body()).isEqualTo(201);
      long after = Long.parseLong(created.json().getString("id"));
      assertThat(after >>> 22).as("the millisecond after the last id's, not the clock's").isEqualTo((before >>> 22) + 1);
    }
    Invariants.assertHold();
  }

  @Test
  void aNodeThatCannotRenewItsLeaseGivesNoIdsUntilItCanAgain() {
    PgConnectOptions database = TestDatabase.connectOptions();
    try (TcpProxy proxy = TcpProxy.to(database.getHost(), database.getPort());
         OwnNode node = OwnNode.start(Vertx.vertx(), new PgConnectOptions(database).setHost("127.0.0.1").setPort(proxy.port()), node(64))) {
      node.api().setStock(SKU, 10);
      assertThat(create(node.api()).status()).isEqualTo(201);

      proxy.cut();
      Await.until("creates answer 503 database_unavailable, for the lease, once it ran out", SAFETY, () -> {
        Api.Response refused = create(node.api());
        return "database_unavailable".equals(refused.code()) && refused.body().contains("lease");
      });
      Api.Response refused = create(node.api());
      assertThat(refused.status()).isEqualTo(503);
      assertThat(refused.code()).isEqualTo("database_unavailable");
      assertThat(refused.raw().headers().firstValue("Retry-After")).hasValue("1");

      proxy.restore();
      Await.until("a create succeeds once the lease is renewed", SAFETY, () -> create(node.api()).status() == 201);
    }
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE user_id = 'u-lease'")).isEqualTo(2);
    Invariants.assertHold();
  }

  private static Map<String, String> node(int nodeId) {
    Map<String, String> settings = new HashMap<>();
    settings.put("OT_NODE_ID", Integer.toString(nodeId));
    settings.put("OT_NODE_LEASE_SECONDS", "3");
    return settings;
  }

  private static Api.Response create(Api api) {
    return api.createOrder(UUID.randomUUID().toString(), new JsonObject()
        .put("userId", "u-lease").put("timeoutSeconds", 600)
        .put("items", new JsonArray().add(new JsonObject().put("sku", SKU).put("qty", 1))));
  }

  private static long id(long millis, int nodeId, int sequence) {
    return ((millis - EPOCH) << 22) | ((long) nodeId << 12) | sequence;
  }

  private static long highWaterOf(int nodeId) {
    return Sql.count("SELECT id_high_water_millis FROM node_leases WHERE node_id = ?", nodeId);
  }
}
