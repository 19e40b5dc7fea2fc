package ordertimeout.limit;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.LocalCodec;
import ordertimeout.bus.PermitGrant;
import ordertimeout.bus.PermitRequest;
import ordertimeout.config.AppConfig;
import ordertimeout.redis.RedisHealth;
import ordertimeout.support.Await;
import ordertimeout.support.TestRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static ordertimeout.support.TestService.await;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The limiter's bus contract (PermitRequest in, PermitGrant out) with the Redis-backed bucket: two nodes
 * (two Vert.x instances, each with its own limiter and Redis client) share one real Redis, which then
 * enforces one rate for the cluster; and with Redis taken away, each policy does what it says.
 */
class ClusterLimiterTest {
  private static final AppConfig.Limits LIMITS = new AppConfig.Limits(1, 20);
  private static final AppConfig.Clients CLIENTS = new AppConfig.Clients(new AppConfig.ClientLimits(100, 100, 3600, 1, 5), Map.of());
  private final List<Vertx> nodes = new ArrayList<>();
  private final ListAppender<ILoggingEvent> log = new ListAppender<>();
  private final Logger healthLogger = (Logger) LoggerFactory.getLogger(RedisHealth.class);
  private TestRedis redis;

  @BeforeEach
  void startRedis() {
    redis = TestRedis.start();
    log.start();
    healthLogger.addAppender(log);
  }

  @AfterEach
  void stopAll() {
    healthLogger.detachAppender(log);
    nodes.forEach(vertx -> await(vertx.close()));
    redis.close();
  }

  private RedisHealth node(AppConfig.WhenUnreachable policy) {
    Vertx vertx = Vertx.vertx();
    nodes.add(vertx);
    LocalCodec.registerAll(vertx);
    RedisHealth health = new RedisHealth(new SimpleMeterRegistry(), new AppConfig.Redis(redis.url(), "ot", 500, policy, 30));
    await(vertx.deployVerticle(new LimiterVerticle(LIMITS, CLIENTS, health)));
    return health;
  }

  private PermitGrant ask(int node, String bucket, int permits) {
    return await(nodes.get(node).eventBus().<PermitGrant>request(Addresses.LIMITER_ACQUIRE, new PermitRequest(bucket, permits))).body();
  }

  @Test
  void twoNodesSharingRedisGetOneClusterWideRate() {
    node(AppConfig.WhenUnreachable.LOCAL);
    node(AppConfig.WhenUnreachable.LOCAL);
    // closes: 1 per second, burst 20. Each node alone would grant 20 at once; together they must not.
    long start = System.nanoTime();
    int granted = 0;
    int[] grantedByNode = new int[2];
    PermitGrant last = null;
    for (int i = 0; i < 8; i++) {
      last = ask(i % 2, LimiterVerticle.CLOSES, 5);
      granted += last.granted();
      grantedByNode[i % 2] += last.granted();
    }
    double elapsedSeconds = (System.nanoTime() - start) / 1e9;
    assertThat(granted).as("the shared burst of 20, plus 1 per second that passed (%.1f s)", elapsedSeconds)
        .isGreaterThanOrEqualTo(20)
        .isLessThanOrEqualTo(20 + (int) Math.ceil(elapsedSeconds));
    assertThat(grantedByNode[0]).as("both nodes took from it").isPositive();
    assertThat(grantedByNode[1]).isPositive();
    assertThat(last.granted()).isLessThan(5);
    assertThat(last.retryAfterMillis()).as("until the missing permits refill at 1 per second").isBetween(1L, 5_000L);
    assertThat(redis.command("HGET ot:bucket:closes tokens")).isNotNull();
    long ttl = Long.parseLong(redis.command("PTTL ot:bucket:closes").substring(1));
    assertThat(ttl).as("the key expires once the bucket would be full again").isBetween(1L, 21_000L);

    // Per-client create buckets are separate keys: another client still has its whole burst.
    assertThat(ask(0, LimiterVerticle.CREATES_PREFIX + "shop-1", 5).granted()).isEqualTo(5);
    assertThat(ask(1, LimiterVerticle.CREATES_PREFIX + "shop-1", 1).granted()).as("the same client on the other node").isZero();
    assertThat(ask(1, LimiterVerticle.CREATES_PREFIX + "shop-2", 5).granted()).isEqualTo(5);
  }

  @Test
  void localPolicyFallsBackToTheNodesOwnBucketSaysSoOnceAndComesBack() {
    RedisHealth health = node(AppConfig.WhenUnreachable.LOCAL);
    assertThat(ask(0, LimiterVerticle.CLOSES, 20).granted()).as("the cluster bucket's whole burst").isEqualTo(20);
    assertThat(ask(0, LimiterVerticle.CLOSES, 5).granted()).as("the cluster bucket is empty").isLessThanOrEqualTo(1);

    redis.stop();
    PermitGrant fallback = ask(0, LimiterVerticle.CLOSES, 5);
    assertThat(fallback.granted()).as("this node's own bucket, untouched so far, has its burst").isEqualTo(5);
    for (int i = 0; i < 5; i++) {
      ask(0, LimiterVerticle.CLOSES, 1);
    }
    assertThat(health.isUp()).isFalse();
    assertThat(health.fallbacks(RedisHealth.CLOSES)).as("every request served without Redis").isEqualTo(6);
    assertThat(health.fallbacks(RedisHealth.CREATES)).isZero();
    assertThat(lines(Level.WARN)).as("one WARN for the outage, not one per request").hasSize(1);
    assertThat(lines(Level.WARN).get(0)).contains("redis unreachable").contains("own token bucket");

    redis.restart();
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!health.isUp()) {
      assertThat(System.nanoTime()).as("the limiter tried Redis again within 20 s").isLessThan(deadline);
      ask(0, LimiterVerticle.CLOSES, 1);
      Await.sleep(50);
    }
    assertThat(redis.command("EXISTS ot:bucket:closes")).as("the restarted Redis (scripts forgotten) ran the bucket again")
        .isEqualTo(":1");
    assertThat(lines(Level.INFO)).hasSize(1);
    assertThat(lines(Level.INFO).get(0)).contains("redis reachable again");
    assertThat(lines(Level.WARN)).hasSize(1);
  }

  @Test
  void denyPolicyGrantsNoCreatesWhileRedisIsAwayAndSaysWhenToAskAgainButClosesGoOn() {
    RedisHealth health = node(AppConfig.WhenUnreachable.DENY);
    assertThat(ask(0, LimiterVerticle.CREATES_PREFIX + "shop-1", 1).granted()).isEqualTo(1);
    redis.stop();
    PermitGrant denied = ask(0, LimiterVerticle.CREATES_PREFIX + "shop-1", 1);
    assertThat(denied.granted()).isZero();
    assertThat(denied.limiterUnavailable()).as("refused for the outage, not for the rate").isTrue();
    assertThat(denied.retryAfterMillis()).as("when Redis is tried again").isBetween(1L, RedisHealth.PROBE_INTERVAL_MILLIS);
    PermitGrant closes = ask(0, LimiterVerticle.CLOSES, 3);
    assertThat(closes.granted()).as("closes take from this node's own bucket").isEqualTo(3);
    assertThat(closes.limiterUnavailable()).isFalse();
    assertThat(health.fallbacks(RedisHealth.CREATES)).isEqualTo(1);
    assertThat(health.fallbacks(RedisHealth.CLOSES)).isEqualTo(1);
    assertThat(lines(Level.WARN)).singleElement().asString()
        .contains("own token bucket limits the closes").contains("rate_limiter_unavailable");

    redis.restart();
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (ask(0, LimiterVerticle.CREATES_PREFIX + "shop-1", 1).granted() == 0) {
      assertThat(System.nanoTime()).as("permits again once Redis is back").isLessThan(deadline);
      Await.sleep(50);
    }
    assertThat(health.isUp()).isTrue();
  }

  @Test
  void permitsGrantedAfterTheCallerStoppedWaitingGoBackToTheSharedBucket() {
    RedisHealth health = node(AppConfig.WhenUnreachable.DENY);
    assertThat(ask(0, LimiterVerticle.CLOSES, 1).granted()).isEqualTo(1);
    assertThat(redis.command("CLIENT PAUSE 1500 ALL")).isEqualTo("+OK");
    assertThat(ask(0, LimiterVerticle.CLOSES, 10).granted()).as("this node's own bucket").isEqualTo(10);
    assertThat(health.fallbacks(RedisHealth.CLOSES)).as("Redis answered after the 500 ms timeout").isEqualTo(1);

    // Redis runs the script once the pause ends (taking 10 of the 19 left) and then the refund: the stored count
    // goes back to 19 or more (capped at the burst of 20), not to 9 plus the refill.
    long deadline = System.nanoTime() + 10_000_000_000L;
    double tokens;
    while ((tokens = storedTokens()) < 19) {
      assertThat(System.nanoTime()).as("the late grant given back within 10 s; tokens %s", tokens).isLessThan(deadline);
      Await.sleep(100);
    }
  }

  @Test
  void permitsGivenBackGoToTheSharedBucket() {
    node(AppConfig.WhenUnreachable.DENY);
    assertThat(ask(0, LimiterVerticle.CLOSES, 20).granted()).as("the whole burst").isEqualTo(20);
    nodes.get(0).eventBus().send(Addresses.LIMITER_REFUND, new PermitRequest(LimiterVerticle.CLOSES, 15));
    Await.until("15 permits back in Redis", Duration.ofSeconds(10), () -> storedTokens() >= 15);
    assertThat(ask(0, LimiterVerticle.CLOSES, 15).granted()).isEqualTo(15);
  }

  @Test
  void theSharedBucketRefillsWhenRedissClockWentBack() {
    node(AppConfig.WhenUnreachable.DENY);
    long aMinuteAheadMicros = (System.currentTimeMillis() + 60_000) * 1000;
    redis.command("HSET ot:bucket:closes tokens 0 at " + aMinuteAheadMicros);
    assertThat(ask(0, LimiterVerticle.CLOSES, 1).granted()).as("empty, and no time passed by the new clock").isZero();
    Await.sleep(1_200);
    assertThat(ask(0, LimiterVerticle.CLOSES, 1).granted()).as("1 a second refilled since, by the clock as it is now")
        .isEqualTo(1);
  }

  private double storedTokens() {
    String tokens = redis.command("HGET ot:bucket:closes tokens");
    return tokens == null ? -1 : Double.parseDouble(tokens);
  }

  private List<String> lines(Level level) {
    return log.list.stream().filter(event -> event.getLevel() == level).map(ILoggingEvent::getFormattedMessage).toList();
  }

}
