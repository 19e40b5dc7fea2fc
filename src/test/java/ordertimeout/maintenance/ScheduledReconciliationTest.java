package ordertimeout.maintenance;

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

import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The daily reconciliation on the real service: nodes started after the day's time with no run recorded run it at
 * start, one of them only, and GET /v1/admin/reconciliation/latest answers its report; a restart does not run the
 * slot again.
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
