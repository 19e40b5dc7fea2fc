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
 * takes over, so the closes go on, at the limit. {@code deny} refuses creates only: the closes take from
 * the node's own bucket as well, so due orders close on time. Either way every request served without
 * Redis is counted in {@code ordertimeout_redis_fallbacks_total{operation="closes"}}.
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
  void denyPolicyStillClosesDueOrdersOnTimeFromTheNodesOwnBucketWhileRedisIsDown() {
    TestDatabase.reset();
    try (TestRedis redis = TestRedis.start(); TestService node = TestService.start(settings(redis, "deny"))) {
      node.api().setStock(SKU, 1000);
      redis.stop();
      List<String> ids = node.api().createOrders(10, 1, SKU);

      Await.until("every order closed by the wheel while Redis is down", Duration.ofSeconds(20),
          () -> node.service().stats().timeoutCloses(DueOrders.Path.WHEEL) == ids.size());
      assertThat(unpaid(ids)).isZero();
      long latestMillis = Sql.count("SELECT (extract(epoch FROM max(closed_at - close_at)) * 1000)::bigint FROM orders "
          + "WHERE id IN (" + String.join(",", ids) + ")");
      assertThat(Duration.ofMillis(latestMillis))
          .as("on time: 5 closes past the burst of 5 at 5 per second take a second more")
          .isLessThan(Duration.ofSeconds(4));
      assertThat(Metrics.value(node.api(), UP)).isZero();
      assertThat(Metrics.value(node.api(), CLOSE_FALLBACKS)).as("close permits served without Redis")
          .isGreaterThanOrEqualTo(1);
      assertThat(redis.isRunning()).isFalse();
      Invariants.assertHold();
    }
  }

  /**
   * At 1 close a second with a burst of 10, 20 due orders take 10 closes at once, then wait 10 s for the next 10
   * permits: a drain under 5 s shows that it woke that wait rather than let it run out.
   */
  @Test
  void aDrainDoesNotWaitForClosePermitsWhileRedisIsDown() {
    TestDatabase.reset();
    try (TestRedis redis = TestRedis.start()) {
      Map<String, String> settings = new HashMap<>(settings(redis, "deny"));
      settings.put("OT_DRAIN_TIMEOUT_SECONDS", "30");
      settings.put("OT_LIMITS_CLOSES_PER_SECOND", "1");
      settings.put("OT_LIMITS_CLOSES_BURST", "10");
      try (TestService node = TestService.start(settings)) {
        node.api().setStock(SKU, 1000);
        redis.stop();
        List<String> ids = node.api().createOrders(20, 1, SKU);
        Await.until("the first orders closed", SAFETY, () -> unpaid(ids) < ids.size());

        long start = System.nanoTime();
        TestService.await(node.service().drain());
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .as("the batch stopped waiting for permits at the drain's start, not at its deadline of 30 s")
            .isLessThan(Duration.ofSeconds(5));
        assertThat(unpaid(ids)).as("left for the sweep or the next node").isPositive();
      }
    }
  }

  private static long unpaid(List<String> ids) {
    return Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND id IN (" + String.join(",", ids) + ")");
  }
}
