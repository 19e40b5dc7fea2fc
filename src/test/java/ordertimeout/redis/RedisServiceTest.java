package ordertimeout.redis;

import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Metrics;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole service with Redis on: creates limited by the Redis bucket, what an operator sees in
 * /metrics while Redis is away (creates go on from the node's own bucket) and when it is back, and the
 * retention job taking its lock.
 */
class RedisServiceTest extends ServiceTestBase {
  private static final String UP = "ordertimeout_redis_up";
  private static final String CREATE_FALLBACKS = "ordertimeout_redis_fallbacks_total{operation=\"creates\"}";
  private TestRedis redis;

  @Override
  protected Map<String, String> overrides() {
    redis = TestRedis.start();
    return Map.of(
        "OT_REDIS_URL", redis.url(),
        // a slow answer on a loaded machine is not an outage: the zero fallbacks below say which bucket served the
        // creates, not how fast Redis answered (a stopped Redis refuses the connection at once, whatever the timeout)
        "OT_REDIS_TIMEOUT_MILLIS", "2000",
        "OT_CLIENTS_DEFAULT_CREATES_PER_SECOND", "1",
        "OT_CLIENTS_DEFAULT_CREATES_BURST", "5",
        "OT_RETENTION_INTERVAL_SECONDS", "1");
  }

  @AfterAll
  void stopRedis() {
    redis.close();
  }

  private Api.Response createOne() {
    return api.createOrder(UUID.randomUUID().toString(), orderBody("u-1", 3600, "SKU-1", 1));
  }

  @Test
  void createsUseTheRedisBucketAndTheNodesOwnWhileRedisIsAway() {
    api.setStock("SKU-1", 1000);
    Await.until("Redis up", Duration.ofSeconds(20), () -> {
      createOne();
      return Metrics.value(api, UP) == 1.0;
    });
    Api.Response limited = null;
    for (int i = 0; i < 20 && limited == null; i++) {
      Api.Response response = createOne();
      if (response.status() == 429) {
        limited = response;
      }
    }
    assertThat(limited).as("the Redis bucket ran dry").isNotNull();
    assertThat(limited.code()).isEqualTo("rate_limited");
    assertThat(redis.command("EXISTS ot:bucket:creates:dev-user")).isEqualTo(":1");
    assertThat(Metrics.value(api, CREATE_FALLBACKS)).isZero();

    redis.stop();
    Api.Response whileAway = createOne();
    assertThat(whileAway.status()).as("this node's own bucket, untouched so far, grants: " + whileAway.body()).isEqualTo(201);
    assertThat(Metrics.value(api, UP)).isZero();
    assertThat(Metrics.value(api, CREATE_FALLBACKS)).isGreaterThanOrEqualTo(1.0);

    redis.restart();
    // Whichever call finds Redis first (a create's permit or the retention job's lock) marks it up for the node.
    Await.until("Redis up again", Duration.ofSeconds(20), () -> {
      createOne();
      return Metrics.value(api, UP) == 1.0;
    });
    createOne();
    assertThat(redis.command("EXISTS ot:bucket:creates:dev-user")).as("the bucket lives in Redis again").isEqualTo(":1");
  }

  @Test
  void retentionTakesItsLockInRedis() {
    String ran = "ordertimeout_job_runs_total{job=\"retention\",outcome=\"ran\"}";
    String ranWithoutLock = "ordertimeout_job_runs_total{job=\"retention\",outcome=\"ran_without_lock\"}";
    double before = Metrics.value(api, ran);
    // from here: the other test stops Redis for a moment, and a retention tick then rightly runs without the lock
    double withoutLockBefore = Metrics.value(api, ranWithoutLock);
    Await.until("a retention run", Duration.ofSeconds(20), () -> Metrics.value(api, ran) > before);
    assertThat(redis.command("GET ot:lock:retention")).as("kept for the rest of the interval").startsWith("node-1-");
    // Not "never skipped": a tick that comes late lets the next come early (seen on a loaded machine), and that one
    // finds this node's own claim on the interval, the only holder there is; it must never have run without the lock.
    assertThat(Metrics.value(api, ranWithoutLock) - withoutLockBefore).as("retention runs without the lock (Redis not reached)")
        .isZero();
  }
}
