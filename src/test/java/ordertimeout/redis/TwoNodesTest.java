package ordertimeout.redis;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.Metrics;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestRedis;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two nodes of the service (node ids 1 and 2, each on its own Vert.x with its own limiter and job
 * timers) on the same database and the same real Redis: one create rate per client for the cluster,
 * and the retention job run by one node per interval; no node answers a status from its cache.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TwoNodesTest {
  private TestRedis redis;
  private List<TestService> nodes;

  @BeforeAll
  void start() {
    TestDatabase.reset();
    redis = TestRedis.start();
    Map<String, String> common = Map.of(
        "OT_REDIS_URL", redis.url(),
        // a slow answer on a loaded machine is not an outage: every create and lock below must go through Redis
        "OT_REDIS_TIMEOUT_MILLIS", "2000",
        "OT_CLIENTS_DEFAULT_CREATES_PER_SECOND", "1",
        "OT_CLIENTS_DEFAULT_CREATES_BURST", "10",
        "OT_RETENTION_INTERVAL_SECONDS", "1");
    // each node in the list once started: a failed start of the second still has the first closed by stop()
    nodes = new ArrayList<>();
    nodes.add(TestService.start(with(common, "OT_NODE_ID", "1")));
    nodes.add(TestService.start(with(common, "OT_NODE_ID", "2")));
  }

  @AfterAll
  void stop() {
    if (nodes != null) {
      nodes.forEach(TestService::close);
    }
    if (redis != null) {
      redis.close();
    }
    Invariants.assertHold();
  }

  private static Map<String, String> with(Map<String, String> common, String key, String value) {
    Map<String, String> all = new HashMap<>(common);
    all.put(key, value);
    return all;
  }

  @Test
  void aClientsCreatesShareOneRateAcrossTheNodes() {
    nodes.get(0).api().setStock("SKU-1", 1000);
    int[] created = new int[2];
    int[] limited = new int[2];
    long start = System.nanoTime();
    for (int i = 0; i < 30; i++) {
      Api api = nodes.get(i % 2).api();
      JsonObject body = new JsonObject().put("userId", "u-" + i).put("timeoutSeconds", 3600)
          .put("items", new JsonArray().add(new JsonObject().put("sku", "SKU-1").put("qty", 1)));
      Api.Response response = api.createOrder(UUID.randomUUID().toString(), body);
      assertThat(response.status()).as(response.body()).isIn(201, 429);
      if (response.status() == 201) {
        created[i % 2]++;
      } else {
        limited[i % 2]++;
      }
    }
    double elapsedSeconds = (System.nanoTime() - start) / 1e9;
    int total = created[0] + created[1];
    assertThat(total).as("one burst of 10 for the cluster, plus 1 per second (%.1f s); each node alone would allow 10", elapsedSeconds)
        .isGreaterThanOrEqualTo(10)
        .isLessThanOrEqualTo(10 + (int) Math.ceil(elapsedSeconds));
    assertThat(created).as("both nodes created some").doesNotContain(0);
    assertThat(limited).as("and both refused some").doesNotContain(0);
    assertThat(sum("ordertimeout_redis_fallbacks_total{operation=\"creates\"}"))
        .as("creates a node's own bucket served: the shared rate holds only if Redis served them all").isZero();
  }

  @Test
  void retentionRunsOnOneNodePerInterval() {
    String ran = "ordertimeout_job_runs_total{job=\"retention\",outcome=\"ran\"}";
    String skipped = "ordertimeout_job_runs_total{job=\"retention\",outcome=\"skipped\"}";
    double ranBefore = sum(ran);
    double skippedBefore = sum(skipped);
    long start = System.nanoTime();
    Await.sleep(6_000);
    double ranAfter = sum(ran);
    double skippedAfter = sum(skipped);
    double elapsedMillis = (System.nanoTime() - start) / 1e6;
    // Every node ticks once a second; a run keeps the lock until 900 ms after it started. A run that began
    // before the window may end inside it: one more.
    double runs = ranAfter - ranBefore;
    assertThat(runs).as("runs of both nodes in %.0f ms", elapsedMillis)
        .isGreaterThanOrEqualTo(1)
        .isLessThanOrEqualTo(Math.floor(elapsedMillis / 900) + 2);
    assertThat(skippedAfter - skippedBefore).as("the other node's ticks skipped").isGreaterThanOrEqualTo(1);
    assertThat(sum("ordertimeout_job_runs_total{job=\"retention\",outcome=\"ran_without_lock\"}")).isZero();
  }

  private double sum(String series) {
    return nodes.stream().mapToDouble(node -> Metrics.value(node.api(), series)).sum();
  }

  /** The status cache is for a node alone: a pay the other node answered is read as PAID here at once. */
  @Test
  void aPayAnsweredByOneNodeIsReadAsPaidOnTheOtherAtOnce() {
    // the admin's client: its own create rate, which the other tests leave alone
    Api first = nodes.get(0).api().as(Api.ADMIN_KEY);
    Api second = nodes.get(1).api().as(Api.ADMIN_KEY);
    first.setStock("SKU-2", 10);
    JsonObject body = new JsonObject().put("userId", "u-cache").put("timeoutSeconds", 3600)
        .put("items", new JsonArray().add(new JsonObject().put("sku", "SKU-2").put("qty", 1)));
    Api.Response created = first.createOrder(UUID.randomUUID().toString(), body);
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String id = created.json().getString("id");
    assertThat(first.order(id).json().getString("status")).isEqualTo("UNPAID");
    assertThat(first.order(id).json().getString("status")).isEqualTo("UNPAID");

    Api.Response paid = second.pay(id);
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    assertThat(first.order(id).json().getString("status")).isEqualTo("PAID");
    assertThat(sum("ordertimeout_status_cache_reads_total{result=\"hit\"}")).as("no read answered from a cache")
        .isZero();
  }
}
