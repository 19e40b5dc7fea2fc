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

  private void acquire(Message<PermitRequest> message) {
    PermitRequest request = message.body();
    TokenBucket bucket = bucketFor(request.bucket());
    if (bucket == null) {
      message.reply(new PermitGrant(request.permits(), 0));
      return;
    }
    long now = System.nanoTime();
    int granted = bucket.take(request.permits(), now);
    long retryAfterMillis = granted < request.permits() ? Math.max(1, bucket.nanosUntilNextToken(now) / 1_000_000) : 0;
    message.reply(new PermitGrant(granted, retryAfterMillis));
  }

  private TokenBucket bucketFor(String name) {
    int rate;
    int burst;
    if (name.equals(CLOSES)) {
      rate = limits.closesPerSecond();
      burst = limits.closesBurst();
    } else if (name.startsWith(CREATES_PREFIX)) {
      rate = limits.createsPerSecondPerClient();
      burst = limits.createsBurst();
    } else {
      throw new IllegalArgumentException("unknown bucket " + name);
    }
    if (rate <= 0) {
      return null;
    }
    return buckets.computeIfAbsent(name, n -> new TokenBucket(rate, burst, System.nanoTime()));
  }
}
