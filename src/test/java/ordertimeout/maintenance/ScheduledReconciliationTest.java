package ordertimeout.maintenance;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.LogCapture;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestRedis;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The daily reconciliation on the real service: nodes started after the day's time with no run recorded run it at
 * start, one of them only, and GET /v1/admin/reconciliation/latest answers its report; a restart does not run the
 * slot again. A run whose node died is taken over; one still going elsewhere is left alone.
 */
class ScheduledReconciliationTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  @Test
  void nodesStartedPastTheTimeWithNoRunRunItOnceAndTheReportAnswersIt() {
    twoNodesStartedPastTheTime(Map.of());
  }

  /** With Redis on, the nodes take the job's lock around the claim: still one run, and no node left waiting. */
  @Test
  void withRedisTheNodesRunItOnceToo() {
    try (TestRedis redis = TestRedis.start()) {
      twoNodesStartedPastTheTime(Map.of("OT_REDIS_URL", redis.url(), "OT_REDIS_TIMEOUT_MILLIS", "2000"));
    }
  }

  /**
   * A run of the slot whose node died in the middle (never finished, started an hour ago: longer than twice the
   * background statement timeout and a minute) does not count as run: a node started after it takes it over, claiming
   * the slot's row again, and finishes it with a report.
   */
  @Test
  void aRunWhoseNodeDiedIsTakenOver() {
    TestDatabase.reset();
    ZoneId zone = ZoneId.of("Asia/Tokyo");
    LocalTime at = LocalTime.now(zone).minusHours(2).truncatedTo(ChronoUnit.MINUTES);
    Instant slot = new DailySchedule(at, zone).latestSlot(Instant.now());
    startedBy(7, slot, "1 hour");
    try (TestService node = TestService.start(dailyAt(at, zone))) {
      Await.until("the dead node's run to be taken over and finish", WAIT, () -> Sql.count(
          "SELECT count(*) FROM reconciliation_runs WHERE finished_at IS NOT NULL AND report IS NOT NULL") == 1);
      JsonObject latest = node.api().get("/v1/admin/reconciliation/latest", Api.ADMIN_KEY).json();
      assertThat(latest.getString("trigger")).isEqualTo("SCHEDULE");
      assertThat(Instant.parse(latest.getString("slot"))).isEqualTo(slot);
      assertThat(latest.getInteger("nodeId")).as("the node that took it over").isEqualTo(1);
      assertThat(Instant.parse(latest.getString("startedAt"))).as("started again when taken over")
          .isAfter(Instant.now().minus(WAIT.multipliedBy(2)));
      assertThat(latest.getJsonObject("report").getLong("skuDifferencesTotal")).isZero();
      assertThat(Sql.count("SELECT count(*) FROM reconciliation_runs")).as("the slot's one row").isEqualTo(1);
    }
  }

  /**
   * A run of the slot started a minute ago on another node, not finished, is that node's while it may still be going:
   * a node started now leaves it alone, and rather than wait for the next day it looks again later (to take it over
   * if that node died).
   */
  @Test
  void aRunStillGoingElsewhereIsLeftAloneAndLookedAtAgain() {
    TestDatabase.reset();
    ZoneId zone = ZoneId.of("Asia/Tokyo");
    LocalTime at = LocalTime.now(zone).minusHours(2).truncatedTo(ChronoUnit.MINUTES);
    Instant slot = new DailySchedule(at, zone).latestSlot(Instant.now());
    startedBy(7, slot, "1 minute");
    Logger verticleLog = (Logger) LoggerFactory.getLogger(ReconciliationVerticle.class);
    Level level = verticleLog.getLevel();
    verticleLog.setLevel(Level.DEBUG);
    try (LogCapture logs = LogCapture.start(); TestService node = TestService.start(dailyAt(at, zone))) {
      Await.until("the node to find the run going", WAIT,
          () -> logs.text().contains("the reconciliation of slot " + slot + " is still running elsewhere"));
      assertThat(logs.text()).as("it looks again in a minute, not at the next slot")
          .doesNotContain("next daily reconciliation at");
      assertThat(Sql.rows("SELECT node_id, finished_at FROM reconciliation_runs")).as("the run left alone")
          .singleElement()
          .satisfies(run -> assertThat(run).containsEntry("node_id", 7).containsEntry("finished_at", null));
    } finally {
      verticleLog.setLevel(level);
    }
  }

  /** A row of node {@code nodeId}'s run of {@code slot}, started {@code ago} (an interval) ago and not finished. */
  private static void startedBy(int nodeId, Instant slot, String ago) {
    Sql.execute("INSERT INTO reconciliation_runs (slot, trigger, node_id, repair, started_at) "
        + "VALUES (?, 'SCHEDULE', ?, false, now() - ?::interval)", slot.atOffset(ZoneOffset.UTC), nodeId, ago);
  }

  private static Map<String, String> dailyAt(LocalTime at, ZoneId zone) {
    return Map.of("OT_RECONCILIATION_AT", at.format(DateTimeFormatter.ofPattern("HH:mm")),
        "OT_RECONCILIATION_ZONE", zone.getId());
  }

  private void twoNodesStartedPastTheTime(Map<String, String> extra) {
    TestDatabase.reset();
    ZoneId zone = ZoneId.of("Asia/Tokyo");
    // two hours ago on the wall clock of the zone: the slot is past, and nothing ran it
    LocalTime at = LocalTime.now(zone).minusHours(2).truncatedTo(ChronoUnit.MINUTES);
    Instant slot = new DailySchedule(at, zone).latestSlot(Instant.now());
    Map<String, String> daily = new HashMap<>(extra);
    daily.put("OT_RECONCILIATION_AT", at.format(DateTimeFormatter.ofPattern("HH:mm")));
    daily.put("OT_RECONCILIATION_ZONE", zone.getId());
    Map<String, String> secondNode = new HashMap<>(daily);
    secondNode.put("OT_NODE_ID", "2");
    try (LogCapture logs = LogCapture.start();
         TestService first = TestService.start(daily);
         TestService second = TestService.start(secondNode)) {
      Api api = first.api();
      Await.until("the missed slot's reconciliation to finish", WAIT,
          () -> api.get("/v1/admin/reconciliation/latest", Api.ADMIN_KEY).status() == 200);
      JsonObject latest = api.get("/v1/admin/reconciliation/latest", Api.ADMIN_KEY).json();
      assertThat(latest.getString("trigger")).isEqualTo("SCHEDULE");
      assertThat(Instant.parse(latest.getString("slot"))).isEqualTo(slot);
      assertThat(latest.getBoolean("repair")).isFalse();
      assertThat(latest.getInteger("nodeId")).isIn(1, 2);
      assertThat(Instant.parse(latest.getString("finishedAt"))).isAfterOrEqualTo(Instant.parse(latest.getString("startedAt")));
      JsonObject report = latest.getJsonObject("report");
      assertThat(report.getLong("skuDifferencesTotal")).isZero();
      assertThat(report.getLong("parkedOrders")).isZero();
      assertThat(second.api().get("/v1/admin/reconciliation/latest", Api.ADMIN_KEY).json())
          .as("every node answers the same report").isEqualTo(latest);
      Await.until("both nodes to wait for the next slot", WAIT,
          () -> logs.text().split("next daily reconciliation at " + new DailySchedule(at, zone).nextSlot(Instant.now()), -1).length == 3);
      assertThat(logs.text()).doesNotContain("could not run");
      assertThat(Sql.count("SELECT count(*) FROM reconciliation_runs")).as("one run of the slot for the two nodes").isEqualTo(1);
    }
    try (LogCapture logs = LogCapture.start(); TestService restarted = TestService.start(daily)) {
      Await.until("the restarted node to look at the slot and wait for the next", WAIT,
          () -> logs.text().contains("next daily reconciliation at " + new DailySchedule(at, zone).nextSlot(Instant.now())));
      assertThat(restarted.api().post("/v1/admin/reconcile", Api.ADMIN_KEY).status()).isEqualTo(200);
      assertThat(Sql.count("SELECT count(*) FROM reconciliation_runs WHERE trigger = 'SCHEDULE'"))
          .as("the slot ran already: a restart does not run it again").isEqualTo(1);
      JsonObject latest = restarted.api().get("/v1/admin/reconciliation/latest", Api.ADMIN_KEY).json();
      assertThat(latest.getString("trigger")).as("now the run on request is the latest").isEqualTo("REQUEST");
      assertThat(latest.getValue("slot")).isNull();
    }
    Invariants.assertHold();
  }
}
