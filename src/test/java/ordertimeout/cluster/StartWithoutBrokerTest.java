package ordertimeout.cluster;

import io.vertx.core.json.JsonObject;
import ordertimeout.metrics.Alarms;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.EventsTopic;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.apache.kafka.clients.admin.Admin;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A clustered node that starts while the broker is away (decision 0051): it starts, becomes ready (with
 * kafka.readyWithoutBroker; not ready by default, the second test), takes orders and
 * closes its own from its wheel, on time and once, owning no shards; when the broker comes it creates the topics, joins
 * the group, owns every shard (it is alone) and relays the events the outbox kept. A broker of its own, started once to
 * format it and stopped before the node starts. The sweep of unclaimed shards waits a minute here, so the closes within
 * the bound below are the wheel's.
 */
class StartWithoutBrokerTest {
  private static final String SKU = "SKU-START-NO-BROKER";
  private static final int ORDERS = 5;
  private static final int TIMEOUT_SECONDS = 8;
  /** The start's topic check waits 5 s for a broker; the rest is the node's own start. */
  private static final Duration START_BOUND = Duration.ofSeconds(20);
  private static final Duration READY_BOUND = Duration.ofSeconds(5);
  /** The wheel's: a tick, a close batch, a loaded machine. The unclaimed shards' sweep would be 60 s late. */
  private static final Duration LATENESS_BOUND = Duration.ofSeconds(3);

  @Test
  void aNodeStartedWithoutTheBrokerServesAndClosesItsOrdersThenJoinsTheGroupWhenTheBrokerComes() throws Exception {
    TestDatabase.reset();
    try (KafkaBroker broker = KafkaBroker.startNew()) {
      broker.stop();
      ClusterSettings cluster = new ClusterSettings(broker.bootstrapServers());
      long startedAt = System.nanoTime();
      try (TestService node = TestService.start(node(cluster))) {
        Duration startTook = Duration.ofNanos(System.nanoTime() - startedAt);
        System.out.printf("StartWithoutBrokerTest: the node started in %d ms without the broker%n",
            startTook.toMillis());
        assertThat(startTook).as("the start, the broker away").isLessThan(START_BOUND);
        Api api = node.api();
        Await.until("ready without the broker", READY_BOUND, () -> api.get("/health/ready", null).status() == 200);
        JsonObject broker0 = api.get("/health/ready", null).json().getJsonArray("checks").stream()
            .map(check -> (JsonObject) check).filter(check -> check.getString("id").equals("broker"))
            .findFirst().orElseThrow().getJsonObject("data");
        assertThat(broker0.getString("broker")).isEqualTo("UNREACHABLE");
        assertThat(broker0.getString("group")).isEqualTo("NOT_JOINED");
        Await.until("the alarm says the broker is not reachable", Duration.ofSeconds(10),
            () -> node.service().alarms().isFiring(Alarms.Code.BROKER_UNREACHABLE));

        api.setStock(SKU, 100);
        List<String> ids = api.createOrders(ORDERS + 1, TIMEOUT_SECONDS, SKU);
        String paid = ids.get(ORDERS);
        assertThat(api.pay(paid).status()).as("a pay, the broker away").isEqualTo(200);
        assertThat(api.order(ids.get(0)).json().getString("status")).as("a read").isEqualTo("UNPAID");

        Await.until("the unpaid orders closed, the broker still away", Duration.ofSeconds(TIMEOUT_SECONDS)
                .plus(LATENESS_BOUND).plusSeconds(5),
            () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED'") == ORDERS);
        assertThat(node.ownedShards()).as("no shards owned while the broker is away").isEmpty();
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED' AND closed_at < close_at"))
            .as("closed early").isZero();
        long latestMillis =
            Sql.count("SELECT max(extract(epoch FROM closed_at - close_at) * 1000)::bigint FROM orders");
        assertThat(Duration.ofMillis(latestMillis)).as("the latest close's lateness").isLessThan(LATENESS_BOUND);
        assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).as("each closed once")
            .isEqualTo(ORDERS);
        assertThat(Sql.count("SELECT count(DISTINCT order_id) FROM order_log WHERE event = 'CLOSED'"))
            .isEqualTo(ORDERS);
        assertThat(api.order(paid).json().getString("status")).isEqualTo("PAID");
        System.out.printf("StartWithoutBrokerTest: %d orders closed without the broker, the latest %d ms late%n",
            ORDERS, latestMillis);

        broker.start();
        long brokerAt = System.nanoTime();
        Await.until("the node owns every shard, loaded", Duration.ofSeconds(60),
            () -> node.ownedShards().size() == TestDatabase.SHARDS && node.service().ownedShards().allLoaded());
        System.out.printf("StartWithoutBrokerTest: every shard owned %d ms after the broker started%n",
            (System.nanoTime() - brokerAt) / 1_000_000);
        try (Admin admin = broker.admin()) {
          assertThat(admin.describeTopics(Set.of(cluster.timersTopic())).allTopicNames().get(20, TimeUnit.SECONDS)
              .get(cluster.timersTopic()).partitions()).as("the timer topic, created").hasSize(TestDatabase.SHARDS);
        }
        Await.until("ready, the broker reached and the group joined", Duration.ofSeconds(10), () -> {
          Api.Response ready = api.get("/health/ready", null);
          return ready.status() == 200 && ready.body().contains("\"READY\"") && ready.body().contains("\"JOINED\"");
        });
        Await.until("the alarm cleared", Duration.ofSeconds(10),
            () -> !node.service().alarms().isFiring(Alarms.Code.BROKER_UNREACHABLE));
        Await.until("the outbox relayed", Duration.ofSeconds(30),
            () -> Sql.count("SELECT count(*) FROM outbox WHERE " + Sql.unpublished("outbox")) == 0);
        List<EventsTopic.Event> events = EventsTopic.readAll(cluster.bootstrapServers(), cluster.eventsTopic());
        assertThat(events.stream().filter(event -> event.type().equals("ORDER_CREATED"))).hasSize(ORDERS + 1);
        assertThat(events.stream().filter(event -> event.type().equals("ORDER_CLOSED"))).hasSize(ORDERS);

        String later = api.createOrders(1, 2, SKU).get(0);
        Await.until("an order taken once joined closes as usual", Duration.ofSeconds(10),
            () -> "CLOSED".equals(api.order(later).json().getString("status")));
      }
    }
    Invariants.assertHold();
  }

  /**
   * By default (kafka.readyWithoutBroker false) such a node serves but is not ready until it joins the group, so that a
   * rollout gated on readiness halts during the outage: 503, the broker check DOWN. No broker at all: a closed port.
   */
  @Test
  void byDefaultANodeStartedWithoutTheBrokerIsNotReady() {
    TestDatabase.reset();
    Map<String, String> settings = node(new ClusterSettings("127.0.0.1:9"));
    settings.remove("OT_KAFKA_READY_WITHOUT_BROKER");
    try (TestService node = TestService.start(settings)) {
      Api api = node.api();
      api.setStock(SKU, 10);
      assertThat(api.createOrders(1, 60, SKU)).as("it takes orders").hasSize(1);
      long until = System.nanoTime() + READY_BOUND.toNanos();
      while (System.nanoTime() < until) {
        Api.Response ready = api.get("/health/ready", null);
        assertThat(ready.status()).as("ready, the broker away: %s", ready.body()).isEqualTo(503);
        JsonObject broker = check(ready, "broker");
        assertThat(broker.getString("status")).isEqualTo("DOWN");
        assertThat(broker.getJsonObject("data").getString("broker")).isEqualTo("UNREACHABLE");
        assertThat(check(ready, "wheel").getString("status")).isEqualTo("UP");
      }
    }
  }

  /**
   * A bootstrap host that does not resolve makes kafka-clients 4.1 throw as a client is made: the node still starts,
   * takes orders, and its topic check goes on failing (its error changes nothing but the time without the broker).
   */
  @Test
  void aNodeWhoseBrokerHostDoesNotResolveStartsAndKeepsChecking() {
    TestDatabase.reset();
    try (TestService node = TestService.start(node(new ClusterSettings("no-such-host.invalid:9092")))) {
      Api api = node.api();
      api.setStock(SKU, 10);
      assertThat(api.createOrders(1, 60, SKU)).as("it takes orders").hasSize(1);
      JsonObject first = check(api.get("/health/ready", null), "broker").getJsonObject("data");
      assertThat(first.getString("broker")).isEqualTo("UNREACHABLE");
      assertThat(first.getString("error")).contains("No resolvable bootstrap");
      long failedBefore = node.service().brokerTopics().failedChecks();
      Await.until("the check still tried", Duration.ofSeconds(10), () ->
          node.service().brokerTopics().failedChecks() >= failedBefore + 2
              && check(api.get("/health/ready", null), "broker").getJsonObject("data").getString("broker")
                  .equals("UNREACHABLE"));
    }
  }

  private static JsonObject check(Api.Response ready, String id) {
    return ready.json().getJsonArray("checks").stream().map(check -> (JsonObject) check)
        .filter(check -> check.getString("id").equals(id)).findFirst().orElseThrow();
  }

  private static Map<String, String> node(ClusterSettings cluster) {
    Map<String, String> settings = new HashMap<>(cluster.forNode(81));
    settings.put("OT_KAFKA_READY_WITHOUT_BROKER", "true");
    settings.put("OT_SWEEP_UNCLAIMED_GRACE_SECONDS", "60");
    settings.put("OT_ALARMS_EVALUATE_SECONDS", "1");
    settings.put("OT_ALARMS_BROKER_UNREACHABLE_SECONDS", "1");
    return settings;
  }
}
