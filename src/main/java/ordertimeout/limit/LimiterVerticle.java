package ordertimeout.limit;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.PermitGrant;
import ordertimeout.bus.PermitRequest;
import ordertimeout.config.AppConfig;

import java.util.HashMap;
import java.util.Map;

/**
 * Token buckets of this node: {@value #CLOSES} caps closes per second, {@value #CREATES_PREFIX}client
 * caps each API client's creates. A bucket whose rate is 0 grants everything.
 */
public final class LimiterVerticle extends VerticleBase {
  public static final String CLOSES = "closes";
  public static final String CREATES_PREFIX = "creates:";

  private final AppConfig.Limits limits;
  private final Map<String, TokenBucket> buckets = new HashMap<>();

  public LimiterVerticle(AppConfig.Limits limits) {
    this.limits = limits;
  }

  @Override
  public Future<?> start() {
    return vertx.eventBus().<PermitRequest>consumer(Addresses.LIMITER_ACQUIRE, this::acquire).completion();
  }

  /** Grants what the bucket has; for the rest, says when enough will have refilled (not just one token). */
  private void acquire(Message<PermitRequest> message) {
    PermitRequest request = message.body();
    if (!request.bucket().equals(CLOSES) && !request.bucket().startsWith(CREATES_PREFIX)) {
      message.fail(400, "unknown bucket " + request.bucket());
      return;
    }
    TokenBucket bucket = bucketFor(request.bucket());
    if (bucket == null) {
      message.reply(new PermitGrant(request.permits(), 0));
      return;
    }
    long now = System.nanoTime();
    int granted = bucket.take(request.permits(), now);
    int missing = request.permits() - granted;
    long retryAfterMillis = missing > 0 ? Math.max(1, bucket.nanosUntil(missing, now) / 1_000_000) : 0;
    message.reply(new PermitGrant(granted, retryAfterMillis));
  }

  /** The named bucket, or null when its rate is 0 (no cap). */
  private TokenBucket bucketFor(String name) {
    int rate;
    int burst;
    if (name.equals(CLOSES)) {
      rate = limits.closesPerSecond();
      burst = limits.closesBurst();
    } else {
      rate = limits.createsPerSecondPerClient();
      burst = limits.createsBurst();
    }
    if (rate <= 0) {
      return null;
    }
    return buckets.computeIfAbsent(name, n -> new TokenBucket(rate, burst, System.nanoTime()));
  }
}
