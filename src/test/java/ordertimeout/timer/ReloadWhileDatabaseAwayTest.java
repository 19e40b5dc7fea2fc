package ordertimeout.timer;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.Metrics;
import ordertimeout.support.OwnNode;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.TcpProxy;
import ordertimeout.support.TestDatabase;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node of a cluster is given its shards while PostgreSQL is unreachable: loading them fails, and is
 * tried again (every second) until the database is back; meanwhile the node is not ready (503, the
 * wheel LOADING). Once the database answers, the load succeeds, the node is ready, and the orders of
 * those shards close on time, by the wheel.
 *
 * <p>The database is taken away from this node only, by cutting a {@link TcpProxy} between the node and
 * the shared test database, which the test itself keeps reaching directly. The sweep's grace keeps
 * the sweep away: an order closed here was closed by the loaded wheel.
 *
 * <p>A node that starts without the database, or whose lease lapsed for it, stays out of the group (decision 0044):
 * here the node starts with the database, loses it, and is given its shards again within its lease (long here),
 * because the group dropped it (the test removes it, as an expired session does) and it joined again at once.
 */
class ReloadWhileDatabaseAwayTest {
  private static final String SKU = "SKU-AWAY";
  private static final Duration SAFETY = Duration.ofSeconds(120);

  @Test
  void theShardLoadIsRetriedWhileTheDatabaseIsAwayAndTheWheelLoadsWhenItIsBack() throws Exception {
    TestDatabase.reset();
    long[] ids = LongStream.of(3, 17, 42).flatMap(shard -> LongStream.of(SeedOrders.idsInShard((int) shard, 5))).toArray();
    ListAppender<ILoggingEvent> timerLog = new ListAppender<>();
    Logger timerLogger = (Logger) LoggerFactory.getLogger(TimerVerticle.class);
    timerLog.start();
    timerLogger.addAppender(timerLog);

    PgConnectOptions database = TestDatabase.connectOptions();
    try (TcpProxy proxy = TcpProxy.to(database.getHost(), database.getPort());
         Admin admin = KafkaBroker.shared().admin()) {
      Map<String, String> settings = new HashMap<>(new ClusterSettings(KafkaBroker.shared().bootstrapServers()).forNode(41));
      settings.put("OT_SWEEP_GRACE_SECONDS", "3600");
      settings.put("OT_NODE_LEASE_SECONDS", "300"); // not lapsing within the test: the node stays in the group
      PgConnectOptions viaProxy = new PgConnectOptions(database).setHost("127.0.0.1").setPort(proxy.port());
      // the proxy is restored before the node closes: a failure while it is cut still has the 300 s lease released
      try (OwnNode node = OwnNode.start(Vertx.vertx(), viaProxy, settings); AutoCloseable reachable = proxy::restore) {
        Api api = node.api();
        Await.until("the node owns and loaded every shard", SAFETY, () -> node.service().ownedShards().allLoaded()
            && node.service().ownedShards().list().length == TestDatabase.SHARDS);
        SeedOrders.insert(SKU, ids, 3_600_000, 0, null); // after the load: only the next one puts them into the wheel
        proxy.cut();
        String group = settings.get("OT_KAFKA_GROUP_ID");
        admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions())
            .all().get(20, TimeUnit.SECONDS);
        Await.until("loading the shards failed twice: tried again", SAFETY, () -> loadFailures(timerLog).size() >= 2);
        assertThat(node.service().ownedShards().list().length).as("given every shard again")
            .isEqualTo(TestDatabase.SHARDS);
        assertThat(loadFailures(timerLog).get(0)).contains("not ready until they are loaded");
        assertThat(proxy.refused()).as("the node tried to reach the database").isPositive();

        Api.Response notReady = api.get("/health/ready", null);
        assertThat(notReady.status()).isEqualTo(503);
        assertThat(check(notReady, "wheel").getString("status")).isEqualTo("DOWN");
        assertThat(check(notReady, "wheel").getJsonObject("data").getString("wheel")).isEqualTo("LOADING");
        assertThat(check(notReady, "database").getString("status")).isEqualTo("DOWN");
        assertThat(Metrics.value(api, "ordertimeout_wheel_loaded")).isZero();
        assertThat(node.api().stats().getJsonObject("pendingTimers").getLong("total")).as("nothing loaded").isZero();

        // Due 3 s after the database comes back (whole milliseconds, so that the wheel is never early by the database clock).
        Sql.execute("UPDATE orders SET close_at = date_trunc('milliseconds', now()) + interval '3 seconds'");
        proxy.restore();

        Await.until("the node ready", SAFETY, () -> api.get("/health/ready", null).status() == 200);
        Api.Response ready = api.get("/health/ready", null);
        assertThat(check(ready, "wheel").getJsonObject("data").getString("wheel")).isEqualTo("LOADED");
        assertThat(Metrics.value(api, "ordertimeout_wheel_loaded")).isEqualTo(1);

        Await.until("the orders closed by the loaded wheel", SAFETY,
            () -> node.service().stats().timeoutCloses(DueOrders.Path.WHEEL) == ids.length);
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).isZero();
        assertThat(node.service().stats().timeoutCloses(DueOrders.Path.SWEEP)).isZero();
        Map<String, Object> lateness = Sql.rows(
            "SELECT max(extract(epoch FROM closed_at - close_at)) AS worst, count(*) AS closed FROM orders").get(0);
        System.out.printf("ReloadWhileDatabaseAwayTest: %d failed loads while the database was away; %s orders closed by the wheel, "
            + "lateness at most %.3f s%n", loadFailures(timerLog).size(), lateness.get("closed"), ((Number) lateness.get("worst")).doubleValue());
        Invariants.assertHold();
      }
    } finally {
      timerLogger.detachAppender(timerLog);
    }
  }

  private static List<String> loadFailures(ListAppender<ILoggingEvent> log) {
    return List.copyOf(log.list).stream()
        .filter(event -> event.getLevel() == Level.WARN && event.getFormattedMessage().startsWith("loading shards"))
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  private static JsonObject check(Api.Response health, String id) {
    return health.json().getJsonArray("checks").stream().map(JsonObject.class::cast)
        .filter(check -> check.getString("id").equals(id)).findFirst().orElseThrow();
  }
}
