package ordertimeout.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import ordertimeout.config.AppConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The node's alarms: each compares one reading with its configured threshold on every evaluation,
 * fires when the reading goes over it and clears when it is back at or under it. Each change of state
 * writes one WARN line with a stable code ({@code alarm=LATENESS_P99 state=FIRING value=... threshold=...})
 * and each alarm has a gauge, {@code ordertimeout_alarm{code="..."}}, 1 while firing and 0 otherwise.
 * Counts are taken over the last {@code metrics.windowSeconds}. Evaluated by one thread at a time.
 */
public final class Alarms {
  private static final Logger log = LoggerFactory.getLogger(Alarms.class);

  public enum Code {
    /** p99 lateness of the timeout closes in the window, ms. */
    LATENESS_P99("ms"),
    /** Overdue orders the sweep closed in the window (the wheel missed them), per minute. */
    SWEEP_CATCHES("per_minute"),
    /** Age of the oldest unpublished outbox row, s. */
    OUTBOX_AGE("s"),
    /** Batches given up after their retries in the window. */
    CLOSE_BATCHES_GIVEN_UP("batches"),
    /** SKUs whose reserved count differed from their unpaid items at the last reconciliation. */
    RECONCILIATION_DIFFERENCES("skus"),
    /** Events retention deleted at their maximum age before every sink had them, in the window. */
    EVENTS_DROPPED("events"),
    /** Unpaid orders parked after their failed closes, waiting for an admin's retry (all nodes'). */
    PARKED_ORDERS("orders"),
    /** Live nodes whose webhooks (urls, types, clients) differ from this node's. */
    WEBHOOKS_DIFFER("nodes"),
    /** How long this node has found Redis unreachable (its limits and job locks on their fallbacks), s. */
    REDIS_UNREACHABLE("s"),
    /**
     * How long this node has run since its topic check began (after its lease) without the group assigning it shards
     * (the broker away...), s.
     */
    BROKER_UNREACHABLE("s");

    private final String unit;

    Code(String unit) {
      this.unit = unit;
    }
  }

  /**
   * What the alarms look at: the recent p99 lateness, the counters since the node started (the
   * alarms take their increase over the window), the outbox age, the last reconciliation's
   * differences, the parked orders, the nodes with other webhooks, how long Redis has been unreachable
   * ({@code NaN} while unknown, or with Redis off) and how long the node has run without reaching the broker
   * ({@code NaN} with Kafka off).
   */
  public record Readings(double latenessP99Millis, long sweepCatches, long closeBatchesGivenUp, double outboxOldestAgeSeconds,
                         double reconciliationDifferences, long eventsDroppedUndelivered, double parkedOrders,
                         double nodesWithOtherWebhooks, double redisUnreachableSeconds,
                         double brokerUnreachableSeconds) {}

  private record Sample(long atMillis, long sweepCatches, long closeBatchesGivenUp, long eventsDropped) {}

  private final Map<Code, Long> thresholds = new EnumMap<>(Code.class);
  private final Map<Code, AtomicInteger> firing = new EnumMap<>(Code.class);
  private final long windowMillis;
  private final Deque<Sample> samples = new ArrayDeque<>();

  public Alarms(AppConfig.Alarms config, Duration window, MeterRegistry registry) {
    thresholds.put(Code.LATENESS_P99, config.latenessP99Millis());
    thresholds.put(Code.SWEEP_CATCHES, config.sweepCatchesPerMinute());
    thresholds.put(Code.OUTBOX_AGE, config.outboxOldestAgeSeconds());
    thresholds.put(Code.CLOSE_BATCHES_GIVEN_UP, config.closeBatchesGivenUp());
    thresholds.put(Code.RECONCILIATION_DIFFERENCES, config.reconciliationDifferences());
    thresholds.put(Code.EVENTS_DROPPED, config.eventsDroppedUndelivered());
    thresholds.put(Code.PARKED_ORDERS, config.parkedOrders());
    thresholds.put(Code.WEBHOOKS_DIFFER, config.nodesWithOtherWebhooks());
    thresholds.put(Code.REDIS_UNREACHABLE, config.redisUnreachableSeconds());
    thresholds.put(Code.BROKER_UNREACHABLE, config.brokerUnreachableSeconds());
    windowMillis = window.toMillis();
    for (Code code : Code.values()) {
      AtomicInteger state = new AtomicInteger();
      firing.put(code, state);
      Gauge.builder(Meters.ALARM, state, AtomicInteger::get)
          .description("1 while the alarm fires, 0 otherwise (a threshold of -1 turns an alarm off)")
          .tag("code", code.name())
          .strongReference(true)
          .register(registry);
    }
  }

  public boolean isFiring(Code code) {
    return firing.get(code).get() == 1;
  }

  public void evaluate(long nowMillis, Readings readings) {
    Sample base = baseline(new Sample(nowMillis, readings.sweepCatches(), readings.closeBatchesGivenUp(),
        readings.eventsDroppedUndelivered()));
    double sweepCatchesPerMinute = (readings.sweepCatches() - base.sweepCatches()) * 60_000.0 / windowMillis;
    check(Code.LATENESS_P99, readings.latenessP99Millis());
    check(Code.SWEEP_CATCHES, sweepCatchesPerMinute);
    check(Code.OUTBOX_AGE, readings.outboxOldestAgeSeconds());
    check(Code.CLOSE_BATCHES_GIVEN_UP, readings.closeBatchesGivenUp() - base.closeBatchesGivenUp());
    check(Code.RECONCILIATION_DIFFERENCES, readings.reconciliationDifferences());
    check(Code.EVENTS_DROPPED, readings.eventsDroppedUndelivered() - base.eventsDropped());
    check(Code.PARKED_ORDERS, readings.parkedOrders());
    check(Code.WEBHOOKS_DIFFER, readings.nodesWithOtherWebhooks());
    check(Code.REDIS_UNREACHABLE, readings.redisUnreachableSeconds());
    check(Code.BROKER_UNREACHABLE, readings.brokerUnreachableSeconds());
  }

  /** The newest sample at least a window old (or the oldest there is), after adding {@code now}; older ones go. */
  private Sample baseline(Sample now) {
    if (samples.isEmpty()) {
      samples.add(new Sample(now.atMillis(), 0, 0, 0));
    }
    samples.addLast(now);
    long windowStart = now.atMillis() - windowMillis;
    while (samples.size() > 2 && second().atMillis() <= windowStart) {
      samples.removeFirst();
    }
    return samples.peekFirst();
  }

  private Sample second() {
    var iterator = samples.iterator();
    iterator.next();
    return iterator.next();
  }

  private void check(Code code, double value) {
    long threshold = thresholds.get(code);
    if (threshold == AppConfig.Alarms.OFF || Double.isNaN(value)) {
      return;
    }
    int now = value > threshold ? 1 : 0;
    if (firing.get(code).getAndSet(now) != now) {
      log.warn("alarm={} state={} value={} threshold={} unit={} window={}s",
          code, now == 1 ? "FIRING" : "CLEARED", format(value), threshold, code.unit, windowMillis / 1000);
    }
  }

  private static String format(double value) {
    return value == Math.rint(value) ? Long.toString((long) value) : String.format(Locale.ROOT, "%.1f", value);
  }
}
