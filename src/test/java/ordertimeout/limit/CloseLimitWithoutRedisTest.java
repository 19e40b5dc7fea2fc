package ordertimeout.limit;

import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.Metrics;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestRedis;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Closes under a close-rate limit (5 per second, burst 5) while Redis, which holds the cluster-wide
 * bucket, is down, under each {@code redis.whenUnreachable} policy. {@code local}: the node's own bucket
 * takes over, so the closes go on, at the limit. {@code deny}: no close permits at all, so due orders
 * wait, unpaid, until Redis is back, and then close. Either way every request served without Redis is
 * counted in {@code ordertimeout_redis_fallbacks_total{operation="closes"}}.
 *
 * <p>The sweep's grace keeps the sweep away: the closes are the wheel's.
 */
class CloseLimitWithoutRedisTest {
  private static final String SKU = "SKU-LIMIT";
  private static final String UP = "ordertimeout_redis_up";
  private static final String CLOSE_FALLBACKS = "ordertimeout_redis_fallbacks_total{operation=\"closes\"}";
  private static final Duration SAFETY = Duration.ofSeconds(60);

  private static Map<String, String> settings(TestRedis redis, String policy) {
    return Map.of(
        "OT_REDIS_URL", redis.url(),
        "OT_REDIS_WHEN_UNREACHABLE", policy,
        "OT_REDIS_TIMEOUT_MILLIS", "1000", // a loaded test machine is not an outage
        "OT_LIMITS_CLOSES_PER_SECOND", "5",
        "OT_LIMITS_CLOSES_BURST", "5",
        "OT_CLIENTS_DEFAULT_CREATES_PER_SECOND", "0", // the closes' limit is under test: creates ask Redis for nothing
        "OT_SWEEP_GRACE_SECONDS", "3600");
  }

  @Test
  void localPolicyClosesFromTheNodesOwnBucketAtTheLimitWhileRedisIsDown() {
    TestDatabase.reset();
    try (TestRedis redis = TestRedis.start(); TestService node = TestService.start(settings(redis, "local"))) {
      node.api().setStock(SKU, 1000);
      redis.stop();
      List<String> ids = node.api().createOrders(20, 2, SKU);

      Await.until("every order closed by the wheel", SAFETY,
          () -> node.service().stats().timeoutCloses(DueOrders.Path.WHEEL) == ids.size());
      assertThat(unpaid(ids)).isZero();
      assertThat(Metrics.value(node.api(), UP)).as("Redis seen down").isZero();
      assertThat(Metrics.value(node.api(), CLOSE_FALLBACKS)).as("close permits served without Redis").isGreaterThanOrEqualTo(2);
      long spreadMillis = Sql.count("SELECT (extract(epoch FROM max(closed_at) - min(closed_at)) * 1000)::bigint FROM orders "
          + "WHERE id IN (" + String.join(",", ids) + ")");
      assertThat(Duration.ofMillis(spreadMillis))
          .as("the node's own bucket still limits: 15 closes past the burst of 5 at 5 per second take 3 s")
          .isGreaterThanOrEqualTo(Duration.ofSeconds(2));
      assertThat(redis.isRunning()).isFalse();
      Invariants.assertHold();
    }
  }

  @Test
  void denyPolicyHoldsDueOrdersUnpaidWhileRedisIsDownAndClosesThemWhenItIsBack() {
    TestDatabase.reset();
    try (TestRedis redis = TestRedis.start(); TestService node = TestService.start(settings(redis, "deny"))) {
      node.api().setStock(SKU, 1000);
      redis.stop();
      List<String> ids = node.api().createOrders(10, 1, SKU);

      awaitPermitsDeniedOnceEveryOrderIsDue(node, ids);
      assertThat(unpaid(ids)).as("due, and still unpaid: no permits while Redis is down").isEqualTo(ids.size());
      assertThat(node.service().stats().timeoutCloses(DueOrders.Path.WHEEL)).isZero();
      assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isZero();
      assertThat(Metrics.value(node.api(), UP)).isZero();

      redis.restart();
      Await.until("every order closed by the wheel once Redis is back", SAFETY,
          () -> node.service().stats().timeoutCloses(DueOrders.Path.WHEEL) == ids.size());
      assertThat(unpaid(ids)).isZero();
      assertThat(Metrics.value(node.api(), UP)).isEqualTo(1);
      assertThat(redis.command("EXISTS ot:bucket:closes")).as("the permits came from the bucket in Redis").isEqualTo(":1");
      Invariants.assertHold();
    }
  }

  @Test
  void aDrainDoesNotWaitForClosePermitsWhileRedisIsDown() {
    TestDatabase.reset();
    try (TestRedis redis = TestRedis.start()) {
      Map<String, String> settings = new HashMap<>(settings(redis, "deny"));
      settings.put("OT_DRAIN_TIMEOUT_SECONDS", "30");
      TestService node = TestService.start(settings);
      node.api().setStock(SKU, 1000);
      redis.stop();
      List<String> ids = node.api().createOrders(10, 1, SKU);
      awaitPermitsDeniedOnceEveryOrderIsDue(node, ids);

      long start = System.nanoTime();
      TestService.await(node.service().drain());
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .as("the batch stopped waiting for permits at the drain's start, not at its deadline of 30 s")
          .isLessThan(Duration.ofSeconds(10));
      assertThat(unpaid(ids)).as("left for the sweep or the next node").isEqualTo(ids.size());
    }
  }

  /**
   * Creates on a loaded machine may take longer than the 1 s timeout: waits until the last order is due, then for the
   * wheel's batches to ask for permits, be denied, and ask again when Redis is to be tried again.
   */
  private static void awaitPermitsDeniedOnceEveryOrderIsDue(TestService node, List<String> ids) {
    Await.until("every order due", SAFETY, () -> Sql.count("SELECT count(*) FROM orders WHERE close_at >= now() AND "
        + "id IN (" + String.join(",", ids) + ")") == 0);
    double deniedBefore = Metrics.value(node.api(), CLOSE_FALLBACKS);
    Await.until("close permits denied twice more once every order is due", SAFETY,
        () -> Metrics.value(node.api(), CLOSE_FALLBACKS) >= deniedBefore + 2);
  }

  private static long unpaid(List<String> ids) {
    return Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND id IN (" + String.join(",", ids) + ")");
  }
}
