package ordertimeout.limit;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Metrics;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestRedis;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Creates under {@code redis.whenUnreachable=deny} while Redis, which holds the clients' create buckets, is down: the
 * client is not over its rate, so a create answers 503 {@code rate_limiter_unavailable} with Retry-After, not 429
 * {@code rate_limited}, and is counted apart from the real rate limits; the alarm {@code REDIS_UNREACHABLE} fires.
 */
class CreateLimitWithoutRedisTest {
  private static final String SKU = "SKU-NO-LIMITER";

  @Test
  void aCreateAnswers503RateLimiterUnavailableWhileRedisIsDownUnderDeny() {
    TestDatabase.reset();
    try (TestRedis redis = TestRedis.start(); TestService node = TestService.start(Map.of(
        "OT_REDIS_URL", redis.url(),
        "OT_REDIS_WHEN_UNREACHABLE", "deny",
        "OT_REDIS_TIMEOUT_MILLIS", "1000", // a loaded test machine is not an outage
        "OT_ALARMS_EVALUATE_SECONDS", "1",
        "OT_ALARMS_REDIS_UNREACHABLE_SECONDS", "1"))) {
      node.api().setStock(SKU, 1000);
      assertThat(node.api().createOrder("before", body("u-1")).status()).as("Redis up").isEqualTo(201);
      redis.stop();

      Api.Response refused = node.api().createOrder("during", body("u-2"));
      assertThat(refused.status()).as(refused.body()).isEqualTo(503);
      assertThat(refused.code()).isEqualTo("rate_limiter_unavailable");
      assertThat(refused.raw().headers().firstValue("Retry-After")).hasValue("1");
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE user_id = 'u-2'")).as("nothing stored").isZero();
      assertThat(Metrics.value(node.api(), "ordertimeout_requests_shed_total{code=\"rate_limiter_unavailable\"}"))
          .isEqualTo(1);
      assertThat(Metrics.value(node.api(), "ordertimeout_rate_limited_total")).as("not a rate limit").isZero();
      Await.until("the alarm REDIS_UNREACHABLE fires", Duration.ofSeconds(20),
          () -> Metrics.value(node.api(), "ordertimeout_alarm{code=\"REDIS_UNREACHABLE\"}") == 1);
    }
  }

  private static JsonObject body(String userId) {
    return new JsonObject().put("userId", userId).put("timeoutSeconds", 600)
        .put("items", new JsonArray().add(new JsonObject().put("sku", SKU).put("qty", 1)));
  }
}
