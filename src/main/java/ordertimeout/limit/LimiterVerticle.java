package ordertimeout.limit;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.PermitGrant;
import ordertimeout.bus.PermitRequest;
import ordertimeout.config.AppConfig;
import ordertimeout.redis.RedisClient;
import ordertimeout.redis.RedisHealth;

import java.util.HashMap;
import java.util.Map;

/**
 * Token buckets: {@value #CLOSES} caps closes per second, {@value #CREATES_PREFIX}client caps each API
 * client's creates (at its own rate, {@link AppConfig.Clients}). A bucket whose rate is 0 grants everything. With Redis on, the buckets are
 * cluster-wide ({@link ClusterBuckets}); while Redis is unreachable ({@link RedisHealth}) the closes take from this
 * node's own bucket, and for the creates the policy {@code redis.whenUnreachable} decides: {@code local} takes from
 * this node's own bucket, {@code deny} grants nothing ({@link PermitGrant#limiterUnavailable}) and says when Redis
 * will be tried again.
 */
public final class LimiterVerticle extends VerticleBase {
  public static final String CLOSES = "closes";
  public static final String CREATES_PREFIX = "creates:";

  private final AppConfig.Limits limits;
  private final AppConfig.Clients clients;
  private final RedisHealth redisHealth;
  private final Map<String, TokenBucket> buckets = new HashMap<>();
  private RedisClient redis;
  private ClusterBuckets cluster;

  /** {@code redisHealth} is null when Redis is off: the buckets are this node's only. */
  public LimiterVerticle(AppConfig.Limits limits, AppConfig.Clients clients, RedisHealth redisHealth) {
    this.limits = limits;
    this.clients = clients;
    this.redisHealth = redisHealth;
  }

  @Override
  public Future<?> start() {
    if (redisHealth != null) {
      redis = new RedisClient(vertx, redisHealth.config());
      cluster = new ClusterBuckets(redis);
    }
    return Future.join(
        vertx.eventBus().<PermitRequest>consumer(Addresses.LIMITER_ACQUIRE, this::acquire).completion(),
        vertx.eventBus().<PermitRequest>consumer(Addresses.LIMITER_REFUND, this::refund).completion());
  }

  @Override
  public Future<?> stop() {
    return redis == null ? Future.succeededFuture() : redis.close();
  }

  private void acquire(Message<PermitRequest> message) {
    PermitRequest request = message.body();
    String name = request.bucket();
    if (!isBucket(name)) {
      message.fail(400, "unknown bucket " + name);
      return;
    }
    int rate = rateOf(name);
    int burst = burstOf(name);
    if (rate <= 0) {
      message.reply(new PermitGrant(request.permits(), 0));
      return;
    }
    if (cluster == null) {
      message.reply(takeLocally(name, rate, burst, request.permits()));
      return;
    }
    String operation = name.equals(CLOSES) ? RedisHealth.CLOSES : RedisHealth.CREATES;
    if (!redisHealth.shouldTry()) {
      message.reply(fallBack(operation, name, rate, burst, request.permits()));
      return;
    }
    cluster.take(name, rate, burst, request.permits()).onComplete(taken -> {
      if (taken.succeeded()) {
        redisHealth.succeeded();
        message.reply(taken.result());
      } else {
        redisHealth.failed(operation, taken.cause());
        message.reply(fallBack(operation, name, rate, burst, request.permits()));
      }
    });
  }

  /**
   * Permits taken but not used go back to the bucket they would be taken from now: a permit taken from this node's
   * bucket while Redis was away may go back to Redis's, which is only as wrong as the two buckets' difference.
   */
  private void refund(Message<PermitRequest> message) {
    PermitRequest request = message.body();
    String name = request.bucket();
    if (!isBucket(name) || request.permits() <= 0 || rateOf(name) <= 0) {
      return;
    }
    if (cluster != null && redisHealth.isUp()) {
      cluster.giveBack(name, burstOf(name), request.permits());
      return;
    }
    TokenBucket bucket = buckets.get(name);
    if (bucket != null) {
      bucket.giveBack(request.permits(), System.nanoTime());
    }
  }

  private static boolean isBucket(String name) {
    return name.equals(CLOSES) || name.startsWith(CREATES_PREFIX);
  }

  private int rateOf(String bucket) {
    return bucket.equals(CLOSES) ? limits.closesPerSecond() : clientOf(bucket).createsPerSecond();
  }

  private int burstOf(String bucket) {
    return bucket.equals(CLOSES) ? limits.closesBurst() : clientOf(bucket).createsBurst();
  }

  private AppConfig.ClientLimits clientOf(String createsBucket) {
    return clients.of(createsBucket.substring(CREATES_PREFIX.length()));
  }

  /**
   * The closes never wait for Redis: their limit protects the database, and closes held back for an outage would leave
   * every due order unpaid past its deadline on every node.
   */
  private PermitGrant fallBack(String operation, String name, int rate, int burst, int permits) {
    redisHealth.fellBack(operation);
    return name.equals(CLOSES) || redisHealth.config().whenUnreachable() == AppConfig.WhenUnreachable.LOCAL
        ? takeLocally(name, rate, burst, permits)
        : PermitGrant.limiterUnavailable(redisHealth.millisToNextProbe());
  }

  /** Grants what this node's bucket has; for the rest, says when enough will have refilled (not just one token). */
  private PermitGrant takeLocally(String name, int rate, int burst, int permits) {
    TokenBucket bucket = buckets.computeIfAbsent(name, n -> new TokenBucket(rate, burst, System.nanoTime()));
    long now = System.nanoTime();
    int granted = bucket.take(permits, now);
    int missing = permits - granted;
    long retryAfterMillis = missing > 0 ? Math.max(1, bucket.nanosUntil(missing, now) / 1_000_000) : 0;
    return new PermitGrant(granted, retryAfterMillis);
  }
}
