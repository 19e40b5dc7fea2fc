package ordertimeout.limit;

import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The local token buckets: creates per client, and closes per second. Each test that empties a create bucket does it
 * with a client of its own: the buckets live as long as the class's service.
 */
class RateLimitTest extends ServiceTestBase {
  private static final String RETRYING_KEY = "retrying-client-key";
  private static final String FAR_OVER_KEY = "far-over-client-key";

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_AUTH_KEYS", "[{key: dev-user-key, role: user, client: dev-user}, {key: dev-admin-key, role: admin, "
            + "client: dev-admin}, {key: " + RETRYING_KEY + ", role: user, client: retrying}, {key: " + FAR_OVER_KEY
            + ", role: user, client: far-over}]",
        "OT_CLIENTS_DEFAULT_CREATES_PER_SECOND", "1",
        "OT_CLIENTS_DEFAULT_CREATES_BURST", "25",
        "OT_LIMITS_CLOSES_PER_SECOND", "10",
        "OT_LIMITS_CLOSES_BURST", "5");
  }

  @Test
  void createsOverTheClientsRateAnswer429WithRetryAfter() {
    api.setStock("SKU-1", 1000);
    int created = 0;
    Api.Response limited = null;
    for (int i = 0; i < 40 && limited == null; i++) {
      Api.Response response = api.createOrder("rl-" + i, orderBody("u-" + i, 600, "SKU-1", 1));
      if (response.status() == 201) {
        created++;
      } else {
        limited = response;
      }
    }
    assertThat(limited).as("the bucket ran dry").isNotNull();
    assertThat(limited.status()).isEqualTo(429);
    assertThat(limited.code()).isEqualTo("rate_limited");
    assertThat(limited.raw().headers().firstValue("Retry-After")).isPresent();
    assertThat(created).as("the burst, plus what refilled meanwhile").isBetween(25, 39);
    assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(created);
  }

  /**
   * A client that retries a create after an unknown outcome learns it even with its bucket empty: the retry of a
   * create that committed answers its order again; the key sent with another body is 422 as always.
   */
  @Test
  void aRetryOfACreateThatCommittedGetsItsOrderWhileTheBucketIsEmpty() {
    Api client = api.as(RETRYING_KEY);
    api.setStock("SKU-3", 1000);
    Api.Response first = client.createOrder("retried", orderBody("u-r", 600, "SKU-3", 1));
    assertThat(first.status()).as(first.body()).isEqualTo(201);
    Api.Response limited = null;
    for (int i = 0; i < 40 && limited == null; i++) {
      Api.Response response = client.createOrder("empties-" + i, orderBody("u-" + i, 600, "SKU-3", 1));
      limited = response.status() == 429 ? response : null;
    }
    assertThat(limited).as("the bucket ran dry").isNotNull();

    // at 1 create a second, at most one of three retries at once could have had a permit
    for (int retry = 0; retry < 3; retry++) {
      Api.Response again = client.createOrder("retried", orderBody("u-r", 600, "SKU-3", 1));
      assertThat(again.status()).as(again.body()).isEqualTo(201);
      assertThat(again.json()).isEqualTo(first.json());
    }
    Api.Response reused = client.createOrder("retried", orderBody("u-r", 600, "SKU-3", 2));
    assertThat(reused.status()).as(reused.body()).isEqualTo(422);
    assertThat(reused.code()).isEqualTo("idempotency_key_reused");
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE user_id = 'u-r'")).isEqualTo(1);
  }

  /**
   * The lookups of refused creates' keys are bounded by the client's own rate and burst: a client sending far over its
   * rate does not turn each refused create into a read of the database.
   */
  @Test
  void aClientFarOverItsRateCausesFewLookupsOfItsKeys() {
    Api client = api.as(FAR_OVER_KEY);
    api.setStock("SKU-4", 1000);
    Sql.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    Sql.rows("SELECT pg_stat_statements_reset()");
    long started = System.nanoTime();
    int refused = 0;
    for (int i = 0; i < 300; i++) {
      Api.Response response = client.createOrder("far-over-" + i, orderBody("u-f" + i, 600, "SKU-4", 1));
      refused += response.status() == 429 ? 1 : 0;
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    long lookups = Sql.count("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
        + "WHERE query LIKE 'SELECT request_hash, response_body FROM idempotency_keys WHERE%'");
    int instances = service.config().http().instances();
    assertThat(refused).as("refused creates").isGreaterThan(200);
    // each intake instance: a burst of 25, then 1 a second
    assertThat(lookups).as("key lookups for %d refused creates in %.1f s", refused, seconds)
        .isLessThanOrEqualTo((long) (instances * (2 * 25 + 2 * Math.ceil(seconds))));
  }

  /**
   * 20 orders written in one statement, so one sweep pass finds them all and hands them on as one batch: uncapped, one
   * transaction closes them at one database time.
   */
  @Test
  void closesAreCappedPerSecond() {
    api.setStock("SKU-2", 1000);
    Sql.execute("""
        WITH o AS (INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
                   SELECT 1000 + i, 0, 'dev-user', 'u', 'physical', 'UNPAID', now(), now() + interval '1 second'
                   FROM generate_series(0, 19) AS i RETURNING id)
        INSERT INTO order_items (order_id, sku, qty) SELECT id, 'SKU-2', 1 FROM o""");
    Sql.execute("UPDATE inventory SET available = available - 20, reserved = reserved + 20 WHERE sku = 'SKU-2'");
    // These orders were written behind the wheel's back: the sweep finds them.
    Await.until("all closed", Duration.ofSeconds(15), () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
    Duration took = Duration.ofMillis(Sql.count("SELECT (extract(epoch FROM max(closed_at) - min(closed_at)) * 1000)::bigint FROM orders"));
    assertThat(took).as("a burst of 5, then 15 more at 10 per second, 5 every half second: 1.5 s")
        .isGreaterThanOrEqualTo(Duration.ofMillis(1400));
  }
}
