package ordertimeout.metrics;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import ordertimeout.support.Await;
import ordertimeout.support.Prometheus;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The alarms of the real service: an order closed seconds late by the sweep makes LATENESS_P99 and
 * SWEEP_CATCHES fire (one WARN line each, gauge 1) and, once the short window has passed, clear; a live node whose
 * webhooks differ makes WEBHOOKS_DIFFER fire.
 */
class AlarmServiceTest extends ServiceTestBase {
  private final ListAppender<ILoggingEvent> log = new ListAppender<>();
  private final Logger logger = (Logger) LoggerFactory.getLogger(Alarms.class);

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_METRICS_WINDOW_SECONDS", "3",
        "OT_ALARMS_EVALUATE_SECONDS", "1",
        "OT_METRICS_OUTBOX_REFRESH_SECONDS", "1",
        "OT_ALARMS_LATENESS_P99_MILLIS", "1000",
        "OT_ALARMS_SWEEP_CATCHES_PER_MINUTE", "0");
  }

  @BeforeAll
  void listen() {
    log.start();
    logger.addAppender(log);
  }

  @AfterAll
  void stopListening() {
    logger.detachAppender(log);
  }

  private double alarm(Alarms.Code code) {
    return new Prometheus(api.get("/metrics", null).body()).sum("ordertimeout_alarm", "code", code.name());
  }

  private List<String> lines(Alarms.Code code) {
    return log.list.stream().map(ILoggingEvent::getFormattedMessage).filter(line -> line.startsWith("alarm=" + code + " ")).toList();
  }

  @Test
  void aLateCloseFiresTheLatenessAndSweepAlarmsWhichClearOnceTheWindowHasPassed() {
    assertThat(alarm(Alarms.Code.LATENESS_P99)).isZero();
    assertThat(lines(Alarms.Code.LATENESS_P99)).isEmpty();
    api.setStock("SKU-1", 10);
    String id = create("u-1", 600, "SKU-1", 1).getString("id");
    // Its deadline passed 5 s ago as far as the database knows: the wheel still waits, the sweep closes it 5 s late.
    Sql.execute("UPDATE orders SET close_at = now() - interval '5 seconds' WHERE id = ?", Long.parseLong(id));
    Await.until("the sweep to close it", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));

    Await.until("LATENESS_P99 to fire", Duration.ofSeconds(30), () -> alarm(Alarms.Code.LATENESS_P99) == 1);
    Await.until("SWEEP_CATCHES to fire", Duration.ofSeconds(30), () -> alarm(Alarms.Code.SWEEP_CATCHES) == 1);
    assertThat(lines(Alarms.Code.LATENESS_P99)).hasSize(1);
    String fired = lines(Alarms.Code.LATENESS_P99).get(0);
    assertThat(fired).startsWith("alarm=LATENESS_P99 state=FIRING value=").endsWith(" threshold=1000 unit=ms window=3s");
    double value = Double.parseDouble(fired.replaceAll(".* value=([0-9.]+) .*", "$1"));
    assertThat(value).as("about 5 s late").isGreaterThan(1000);
    assertThat(lines(Alarms.Code.SWEEP_CATCHES)).singleElement().asString().startsWith("alarm=SWEEP_CATCHES state=FIRING");

    Await.until("LATENESS_P99 to clear", Duration.ofSeconds(60), () -> alarm(Alarms.Code.LATENESS_P99) == 0);
    Await.until("SWEEP_CATCHES to clear", Duration.ofSeconds(60), () -> alarm(Alarms.Code.SWEEP_CATCHES) == 0);
    assertThat(lines(Alarms.Code.LATENESS_P99)).hasSize(2).last().asString().startsWith("alarm=LATENESS_P99 state=CLEARED value=");
    assertThat(lines(Alarms.Code.SWEEP_CATCHES)).hasSize(2).last().asString().startsWith("alarm=SWEEP_CATCHES state=CLEARED value=0 ");
    assertThat(lines(Alarms.Code.CLOSE_BATCHES_GIVEN_UP)).isEmpty();
  }

  @Test
  void aLiveNodeWhoseWebhooksDifferFiresWebhooksDifferUntilItHasTheSame() {
    String own = (String) Sql.rows("SELECT webhooks FROM node_leases WHERE node_id = ? AND expires_at > now()",
        service.config().node().id()).get(0).get("webhooks");
    assertThat(own).as("this node's fingerprint, written with its lease").hasSize(64);
    try {
      // A node of an older version (no fingerprint) does not count; one with another list does.
      Sql.execute("INSERT INTO node_leases (node_id, holder, expires_at, id_high_water_millis, renewed_at, webhooks) "
          + "VALUES (1022, 'older', now() + interval '1 hour', -1, now(), NULL), "
          + "(1023, 'other', now() + interval '1 hour', -1, now(), 'another list') "
          + "ON CONFLICT (node_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at, "
          + "id_high_water_millis = EXCLUDED.id_high_water_millis, webhooks = EXCLUDED.webhooks");
      Await.until("WEBHOOKS_DIFFER to fire", Duration.ofSeconds(30), () -> alarm(Alarms.Code.WEBHOOKS_DIFFER) == 1);
      assertThat(lines(Alarms.Code.WEBHOOKS_DIFFER)).singleElement().asString()
          .startsWith("alarm=WEBHOOKS_DIFFER state=FIRING value=1 threshold=0 unit=nodes");

      Sql.execute("UPDATE node_leases SET webhooks = ? WHERE node_id = 1023", own);
      Await.until("WEBHOOKS_DIFFER to clear", Duration.ofSeconds(30), () -> alarm(Alarms.Code.WEBHOOKS_DIFFER) == 0);
    } finally {
      Sql.execute("DELETE FROM node_leases WHERE node_id IN (1022, 1023)");
    }
  }
}
