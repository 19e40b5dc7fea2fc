package ordertimeout.redis;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.Meters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Whether this node reaches Redis, shared by the node's limiter and job locks (thread-safe). A failed or
 * timed-out call marks Redis unreachable: one WARN line saying what the node does instead, the gauge
 * {@value Meters#REDIS_UP} goes to 0, and from then on only one call per {@value #PROBE_INTERVAL_MILLIS} ms tries Redis
 * (the others go straight to the fallback, so an outage does not add a timeout to every request). The
 * first call that succeeds again writes one INFO line. Every request or run served by a fallback counts
 * in {@value Meters#REDIS_FALLBACKS} (Prometheus: {@code ordertimeout_redis_fallbacks_total{operation}}).
 */
public final class RedisHealth {
  public static final long PROBE_INTERVAL_MILLIS = 1000;
  /** The operation tags of {@value Meters#REDIS_FALLBACKS}. */
  public static final String CLOSES = "closes";
  public static final String CREATES = "creates";
  public static final String LOCK = "lock";
  private static final Logger log = LoggerFactory.getLogger(RedisHealth.class);

  private final MeterRegistry registry;
  private final AppConfig.Redis config;
  private final AtomicBoolean up = new AtomicBoolean(true);
  /** {@link System#nanoTime()} when this node last found Redis unreachable after reaching it. */
  private final AtomicLong unreachableSinceNanos = new AtomicLong();
  private final AtomicLong nextProbeNanos = new AtomicLong();
  private final Map<String, Counter> fallbacks = new ConcurrentHashMap<>();

  public RedisHealth(MeterRegistry registry, AppConfig.Redis config) {
    this.registry = registry;
    this.config = config;
    Gauge.builder(Meters.REDIS_UP, up, reachable -> reachable.get() ? 1 : 0)
        .description("1 while this node reaches Redis, 0 while its limits and job locks use their fallbacks")
        .strongReference(true)
        .register(registry);
    for (String operation : new String[] {CLOSES, CREATES, LOCK}) {
      counter(operation);
    }
  }

  public AppConfig.Redis config() {
    return config;
  }

  public boolean isUp() {
    return up.get();
  }

  /** True while Redis is up, and for one caller per probe interval while it is not. */
  public boolean shouldTry() {
    if (up.get()) {
      return true;
    }
    long now = System.nanoTime();
    long next = nextProbeNanos.get();
    return now - next >= 0 && nextProbeNanos.compareAndSet(next, now + PROBE_INTERVAL_MILLIS * 1_000_000);
  }

  /** Milliseconds until the next call will try Redis again (at least 1). */
  public long millisToNextProbe() {
    return Math.max(1, (nextProbeNanos.get() - System.nanoTime()) / 1_000_000);
  }

  /** Seconds since this node found Redis unreachable, 0 while it reaches it. */
  public double unreachableSeconds() {
    return up.get() ? 0 : Math.max(0, (System.nanoTime() - unreachableSinceNanos.get()) / 1e9);
  }

  public void succeeded() {
    if (up.compareAndSet(false, true)) {
      log.info("redis reachable again: limits are cluster-wide again and singleton jobs take their lock");
    }
  }

  /** A call to Redis failed or timed out: {@code operation} (closes, creates, lock) uses its fallback. */
  public void failed(String operation, Throwable cause) {
    long now = System.nanoTime();
    nextProbeNanos.set(now + PROBE_INTERVAL_MILLIS * 1_000_000);
    if (up.get()) {
      unreachableSinceNanos.set(now);
    }
    if (up.compareAndSet(true, false)) {
      String limits = config.whenUnreachable() == AppConfig.WhenUnreachable.LOCAL
          ? "each node's own token bucket enforces the limits (redis.whenUnreachable=local)"
          : "each node's own token bucket limits the closes; creates get no permits and answer 503 "
              + "rate_limiter_unavailable (redis.whenUnreachable=deny)";
      log.warn("redis unreachable ({} failed: {}): {}; singleton jobs run without their lock; trying again every {} ms, "
              + "fallbacks counted in ordertimeout_redis_fallbacks_total",
          operation, cause.toString(), limits, PROBE_INTERVAL_MILLIS);
    }
  }

  /** One request or run of {@code operation} was served by the fallback. */
  public void fellBack(String operation) {
    counter(operation).increment();
  }

  private Counter counter(String operation) {
    return fallbacks.computeIfAbsent(operation, name -> Counter.builder(Meters.REDIS_FALLBACKS)
        .description("Requests (closes, creates) and job runs (lock) served without Redis because it was unreachable")
        .tag("operation", name)
        .register(registry));
  }

  public long fallbacks(String operation) {
    Counter counter = fallbacks.get(operation);
    return counter == null ? 0 : (long) counter.count();
  }
}
