package ordertimeout.metrics;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.Alarms.Code;
import ordertimeout.metrics.Alarms.Readings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The alarm rules on their own, with readings made up and a clock that only moves when told. */
class AlarmsTest {
  private static final long T0 = 1_000_000;

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final ListAppender<ILoggingEvent> log = new ListAppender<>();
  private final Logger logger = (Logger) LoggerFactory.getLogger(Alarms.class);
  private Alarms alarms;

  @BeforeEach
  void setUp() {
    log.start();
    logger.addAppender(log);
    alarms = new Alarms(new AppConfig.Alarms(5, 100, 0, 10, 0, 0, 0, 0, 0, 30, 30), Duration.ofSeconds(60), registry);
  }

  @AfterEach
  void tearDown() {
    logger.detachAppender(log);
  }

  private static Readings readings(double latenessP99, long sweepCatches, long givenUp, double outboxAge) {
    return new Readings(latenessP99, sweepCatches, givenUp, outboxAge, 0, 0, 0, 0, 0, 0);
  }

  private double gauge(Code code) {
    return registry.get(Meters.ALARM).tag("code", code.name()).gauge().value();
  }

  private List<String> lines() {
    return log.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
  }

  @Test
  void anAlarmFiresOnceWhenItsReadingGoesOverTheThresholdAndClearsOnceWhenItIsBack() {
    alarms.evaluate(T0, readings(50, 0, 0, 1));
    assertThat(lines()).isEmpty();
    assertThat(gauge(Code.LATENESS_P99)).isZero();

    alarms.evaluate(T0 + 5_000, readings(150, 0, 0, 1));
    alarms.evaluate(T0 + 10_000, readings(250.5, 0, 0, 1));
    assertThat(gauge(Code.LATENESS_P99)).isEqualTo(1);
    assertThat(alarms.isFiring(Code.LATENESS_P99)).isTrue();
    assertThat(lines()).containsExactly("alarm=LATENESS_P99 state=FIRING value=150 threshold=100 unit=ms window=60s");
    assertThat(log.list.get(0).getLevel()).isEqualTo(Level.WARN);

    alarms.evaluate(T0 + 15_000, readings(100, 0, 0, 1));
    alarms.evaluate(T0 + 20_000, readings(20, 0, 0, 1));
    assertThat(gauge(Code.LATENESS_P99)).isZero();
    assertThat(lines()).hasSize(2).last().isEqualTo("alarm=LATENESS_P99 state=CLEARED value=100 threshold=100 unit=ms window=60s");
  }

  @Test
  void countsAreTakenOverTheWindow() {
    alarms.evaluate(T0, readings(0, 0, 0, 0));
    alarms.evaluate(T0 + 20_000, readings(0, 2, 1, 0));
    assertThat(alarms.isFiring(Code.SWEEP_CATCHES)).as("2 catches in a 60 s window: 2 per minute, over 0").isTrue();
    assertThat(alarms.isFiring(Code.CLOSE_BATCHES_GIVEN_UP)).isTrue();
    assertThat(lines()).contains(
        "alarm=SWEEP_CATCHES state=FIRING value=2 threshold=0 unit=per_minute window=60s",
        "alarm=CLOSE_BATCHES_GIVEN_UP state=FIRING value=1 threshold=0 unit=batches window=60s");

    alarms.evaluate(T0 + 60_000, readings(0, 2, 1, 0));
    assertThat(alarms.isFiring(Code.SWEEP_CATCHES)).as("the catches are still within the last minute").isTrue();
    alarms.evaluate(T0 + 85_000, readings(0, 2, 1, 0));
    assertThat(alarms.isFiring(Code.SWEEP_CATCHES)).as("nothing new for over a minute").isFalse();
    assertThat(alarms.isFiring(Code.CLOSE_BATCHES_GIVEN_UP)).isFalse();
    assertThat(lines()).filteredOn(line -> line.contains("state=CLEARED")).hasSize(2);

    alarms.evaluate(T0 + 90_000, readings(0, 3, 1, 0));
    assertThat(alarms.isFiring(Code.SWEEP_CATCHES)).as("one more catch").isTrue();
  }

  @Test
  void anUnknownReadingLeavesTheAlarmAsItIsAndAThresholdOfMinusOneTurnsItOff() {
    alarms.evaluate(T0, readings(0, 0, 0, Double.NaN));
    assertThat(alarms.isFiring(Code.OUTBOX_AGE)).isFalse();
    alarms.evaluate(T0 + 5_000, readings(0, 0, 0, 11));
    assertThat(alarms.isFiring(Code.OUTBOX_AGE)).isTrue();
    alarms.evaluate(T0 + 10_000, readings(0, 0, 0, Double.NaN));
    assertThat(alarms.isFiring(Code.OUTBOX_AGE)).as("the database did not answer: no news").isTrue();

    Alarms off = new Alarms(new AppConfig.Alarms(5, AppConfig.Alarms.OFF, AppConfig.Alarms.OFF, AppConfig.Alarms.OFF,
        AppConfig.Alarms.OFF, AppConfig.Alarms.OFF, AppConfig.Alarms.OFF, AppConfig.Alarms.OFF,
        AppConfig.Alarms.OFF, AppConfig.Alarms.OFF, AppConfig.Alarms.OFF), Duration.ofSeconds(60),
        new SimpleMeterRegistry());
    off.evaluate(T0, new Readings(1e9, 1000, 1000, 1e9, 1000, 1000, 1000, 1000, 1e9, 1e9));
    for (Code code : Code.values()) {
      assertThat(off.isFiring(code)).as(code.name()).isFalse();
    }
  }

  @Test
  void reconciliationDifferencesFireUntilAReconciliationFindsNone() {
    alarms.evaluate(T0, new Readings(0, 0, 0, 0, Double.NaN, 0, 0, 0, 0, 0));
    assertThat(alarms.isFiring(Code.RECONCILIATION_DIFFERENCES)).as("no reconciliation ran yet").isFalse();
    alarms.evaluate(T0 + 5_000, new Readings(0, 0, 0, 0, 2, 0, 0, 0, 0, 0));
    assertThat(alarms.isFiring(Code.RECONCILIATION_DIFFERENCES)).isTrue();
    assertThat(gauge(Code.RECONCILIATION_DIFFERENCES)).isEqualTo(1.0);
    assertThat(lines()).anyMatch(line -> line.contains("alarm=RECONCILIATION_DIFFERENCES state=FIRING value=2"));
    alarms.evaluate(T0 + 10_000, new Readings(0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    assertThat(alarms.isFiring(Code.RECONCILIATION_DIFFERENCES)).isFalse();
  }

  @Test
  void parkedOrdersFireWhileAnyOrderIsParked() {
    alarms.evaluate(T0, new Readings(0, 0, 0, 0, 0, 0, Double.NaN, 0, 0, 0));
    assertThat(alarms.isFiring(Code.PARKED_ORDERS)).as("not read yet").isFalse();
    alarms.evaluate(T0 + 5_000, new Readings(0, 0, 0, 0, 0, 0, 1, 0, 0, 0));
    assertThat(alarms.isFiring(Code.PARKED_ORDERS)).isTrue();
    assertThat(gauge(Code.PARKED_ORDERS)).isEqualTo(1.0);
    assertThat(lines()).anyMatch(line -> line.contains("alarm=PARKED_ORDERS state=FIRING value=1"));
    alarms.evaluate(T0 + 10_000, new Readings(0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    assertThat(alarms.isFiring(Code.PARKED_ORDERS)).isFalse();
  }

  @Test
  void redisUnreachableFiresOnceRedisHasBeenAwayPastItsThresholdAndClearsWhenItIsBack() {
    alarms.evaluate(T0, redisUnreachable(Double.NaN));
    assertThat(alarms.isFiring(Code.REDIS_UNREACHABLE)).as("Redis off").isFalse();
    alarms.evaluate(T0 + 5_000, redisUnreachable(10));
    assertThat(alarms.isFiring(Code.REDIS_UNREACHABLE)).as("a short outage").isFalse();
    alarms.evaluate(T0 + 10_000, redisUnreachable(31));
    assertThat(alarms.isFiring(Code.REDIS_UNREACHABLE)).isTrue();
    assertThat(gauge(Code.REDIS_UNREACHABLE)).isEqualTo(1.0);
    assertThat(lines()).anyMatch(line -> line.contains("alarm=REDIS_UNREACHABLE state=FIRING value=31"));
    alarms.evaluate(T0 + 15_000, redisUnreachable(0));
    assertThat(alarms.isFiring(Code.REDIS_UNREACHABLE)).isFalse();
  }

  private static Readings redisUnreachable(double seconds) {
    return new Readings(0, 0, 0, 0, 0, 0, 0, 0, seconds, 0);
  }
}
