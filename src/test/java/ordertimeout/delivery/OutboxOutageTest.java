package ordertimeout.delivery;

import io.vertx.core.json.JsonObject;
import ordertimeout.bus.DueOrders;
import ordertimeout.metrics.Meters;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.EventsTopic;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox relay across a broker outage: while Kafka is down the events wait in PostgreSQL, the relay
 * counts its failed tries and the node keeps closing orders on time (a node's own shards' timers do not
 * travel through Kafka; see LostTimerTest for timers lost on their way); once the broker is back every row is published, and a consumer that
 * de-duplicates by event id sees each event once. Two relays take turns: each row once, in feed order.
 */
class OutboxOutageTest {
  private static final String SKU = "SKU-OUTAGE";
  private static final Pattern RELAY_FAILURES = Pattern.compile("(?m)^ordertimeout_outbox_relay_failures_total(?:\\{[^}]*})? (\\S+)$");

  @Test
  void eventsWaitInTheOutboxWhileTheBrokerIsDownAndAreAllPublishedWhenItIsBack() throws Exception {
    TestDatabase.reset();
    long testStarted = System.nanoTime();
    try (KafkaBroker broker = KafkaBroker.startNew()) {
      ClusterSettings cluster = new ClusterSettings(broker.bootstrapServers());
      Map<String, String> settings = new HashMap<>(cluster.forNode(31));
      // a publish the broker does not acknowledge fails after 3 s instead of 15 s
      settings.put("OT_KAFKA_DELIVERY_TIMEOUT_MILLIS", "3000");
      // the sweep only as a safety net (a close it made would mean the wheel missed a deadline by a minute): the closes
      // during the outage are the wheel's, on a busy machine as on an idle one
      settings.put("OT_SWEEP_GRACE_SECONDS", "60");
      try (TestService node = TestService.start(settings)) {
        Await.until("the node owns and loaded every shard", Duration.ofSeconds(30),
            () -> node.ownedShards().size() == TestDatabase.SHARDS && node.service().ownedShards().allLoaded());
        node.api().setStock(SKU, 1_000_000);

        // before the outage: published as they happen
        List<String> before = node.api().createOrders(20, 2, SKU);
        Await.until("the first orders closed", Duration.ofSeconds(20), () -> unpaid(before) == 0);
        Await.until("the first events published", Duration.ofSeconds(20), () -> unpublished() == 0);
        long publishedBefore = Sql.count("SELECT count(*) FROM outbox");
        assertThat(publishedBefore).isGreaterThanOrEqualTo(2L * before.size());

        // the outage
        long failuresBefore = relayFailures(node);
        long wheelBefore = closesByPath(node, "wheel");
        long sweepBefore = closesByPath(node, "sweep");
        long stopping = System.nanoTime();
        broker.stop();
        long outageStarted = System.nanoTime();
        List<String> toClose = node.api().createOrders(30, 2, SKU);
        List<String> toPay = node.api().createOrders(10, 600, SKU);
        for (String id : toPay) {
          assertThat(node.api().pay(id).status()).isEqualTo(200);
        }
        Await.until("the orders created during the outage closed", Duration.ofSeconds(60), () -> unpaid(toClose) == 0);
        long closedAfterMillis = (System.nanoTime() - outageStarted) / 1_000_000;
        Await.until("the node counted their closes", Duration.ofSeconds(10),
            () -> closesByPath(node, "wheel") - wheelBefore >= toClose.size());
        assertThat(closesByPath(node, "wheel") - wheelBefore)
            .as("the node owns every shard, so its new timers stay in its own wheel, broker or not")
            .isEqualTo(toClose.size());
        assertThat(closesByPath(node, "sweep") - sweepBefore).as("closed by the sweep").isZero();
        Map<String, Object> lateness = Sql.rows("SELECT max(extract(epoch FROM closed_at - close_at)) AS worst, "
            + "avg(extract(epoch FROM closed_at - close_at)) AS mean FROM orders WHERE id IN (" + String.join(",", toClose) + ")").get(0);
        Await.until("the relay counted a failed try", Duration.ofSeconds(20), () -> relayFailures(node) > failuresBefore);

        List<String> during = new ArrayList<>(toClose);
        during.addAll(toPay);
        String duringIds = String.join(",", during);
        assertThat(Sql.count("SELECT count(*) FROM outbox o WHERE order_id IN (" + duringIds + ") AND " + Sql.published("o")))
            .as("nothing written during the outage was published").isZero();
        assertThat(unpublished()).as("every unpublished row is of the outage")
            .isEqualTo(Sql.count("SELECT count(*) FROM outbox WHERE order_id IN (" + duringIds + ")"));
        assertThat(typesWaiting()).containsEntry("ORDER_CREATED", (long) during.size())
            .containsEntry("ORDER_PAID", (long) toPay.size())
            .containsEntry("ORDER_CLOSED", (long) toClose.size());
        assertThat(Sql.count("SELECT count(*) FROM outbox o WHERE " + Sql.published("o"))).as("published rows stay published")
            .isEqualTo(publishedBefore);
        String metrics = node.api().get("/metrics", null).body();
        Matcher failures = RELAY_FAILURES.matcher(metrics);
        assertThat(failures.find()).as("GET /metrics shows the relay failures").isTrue();
        assertThat(Double.parseDouble(failures.group(1))).isGreaterThan(failuresBefore);
        long failuresDuringOutage = relayFailures(node) - failuresBefore;
        long timerPublishFailures = counter(node, Meters.TIMER_PUBLISH_FAILURES);

        // the broker is back
        long restarting = System.nanoTime();
        broker.start();
        long restarted = System.nanoTime();
        Await.until("every outbox row published", Duration.ofSeconds(40), () -> unpublished() == 0);
        long drainedMillis = (System.nanoTime() - restarted) / 1_000_000;

        List<EventsTopic.Event> events = EventsTopic.readAll(cluster.bootstrapServers(), cluster.eventsTopic());
        Map<Long, EventsTopic.Event> byEventId = new HashMap<>();
        events.forEach(event -> byEventId.putIfAbsent(event.eventId(), event));
        Set<Long> outboxIds = Sql.rows("SELECT event_id FROM outbox").stream()
            .map(row -> ((Number) row.get("event_id")).longValue()).collect(Collectors.toSet());
        assertThat(byEventId.keySet()).as("every outbox row reached the topic, and nothing else did").isEqualTo(outboxIds);
        Map<String, Long> closedEvents = byEventId.values().stream().filter(event -> event.type().equals("ORDER_CLOSED"))
            .collect(Collectors.groupingBy(EventsTopic.Event::orderId, Collectors.counting()));
        Set<String> closed = new HashSet<>(before);
        closed.addAll(toClose);
        assertThat(closedEvents.keySet()).as("one ORDER_CLOSED per closed order").isEqualTo(closed);
        assertThat(closedEvents.values()).allMatch(count -> count == 1);
        for (EventsTopic.Event event : byEventId.values()) {
          assertThat(new JsonObject(event.payload()).getString("orderId")).isEqualTo(event.orderId());
        }
        Invariants.assertHold();

        System.out.printf("OutboxOutageTest: broker stopped in %d ms; during the outage %d relay tries failed, %d timer "
                + "messages were not taken, %d orders closed by the wheel within %d ms of the stop (lateness max %.2f s, "
                + "mean %.2f s), %d events waited; broker restarted in %d ms, outbox empty %d ms later; %d events on the "
                + "topic, %d distinct, %d duplicates dropped; node owns %d shards; %d s in all%n",
            (outageStarted - stopping) / 1_000_000, failuresDuringOutage, timerPublishFailures, toClose.size(),
            closedAfterMillis, ((Number) lateness.get("worst")).doubleValue(), ((Number) lateness.get("mean")).doubleValue(),
            Sql.count("SELECT count(*) FROM outbox WHERE order_id IN (" + duringIds + ")"),
            (restarted - restarting) / 1_000_000, drainedMillis, events.size(), byEventId.size(),
            events.size() - byEventId.size(), node.ownedShards().size(), (System.nanoTime() - testStarted) / 1_000_000_000);
      }
    }
  }

  @Test
  void twoRelaysAtOncePublishEachRowOnce() throws Exception {
    TestDatabase.reset();
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    Map<String, String> first = new HashMap<>(cluster.forNode(32));
    Map<String, String> second = new HashMap<>(cluster.forNode(33));
    // small batches, so that the two relays take turns and race for the same rows
    first.put("OT_KAFKA_RELAY_BATCH_SIZE", "10");
    second.put("OT_KAFKA_RELAY_BATCH_SIZE", "10");
    try (TestService one = TestService.start(first); TestService two = TestService.start(second)) {
      Await.until("the shards are split between the two nodes", Duration.ofSeconds(30),
          () -> one.ownedShards().size() > 0 && two.ownedShards().size() > 0 && one.ownedShards().size() + two.ownedShards().size() == TestDatabase.SHARDS);
      one.api().setStock(SKU, 1_000_000);

      CompletableFuture<List<String>> onOne = CompletableFuture.supplyAsync(() -> one.api().createOrders(150, 600, SKU));
      CompletableFuture<List<String>> onTwo = CompletableFuture.supplyAsync(() -> two.api().createOrders(150, 600, SKU));
      List<String> ids = new ArrayList<>(onOne.join());
      ids.addAll(onTwo.join());
      for (int i = 0; i < ids.size(); i += 3) {
        assertThat((i % 2 == 0 ? one : two).api().pay(ids.get(i)).status()).isEqualTo(200);
      }
      Await.until("every outbox row published", Duration.ofSeconds(30), () -> unpublished() == 0);

      List<EventsTopic.Event> events = EventsTopic.readAll(cluster.bootstrapServers(), cluster.eventsTopic());
      Map<Long, Long> perEventId = events.stream().collect(Collectors.groupingBy(EventsTopic.Event::eventId, Collectors.counting()));
      long rows = Sql.count("SELECT count(*) FROM outbox");
      long publishedByOne = counter(one, Meters.OUTBOX_PUBLISHED);
      long publishedByTwo = counter(two, Meters.OUTBOX_PUBLISHED);
      Map<String, List<EventsTopic.Event>> byOrder = events.stream().collect(Collectors.groupingBy(EventsTopic.Event::orderId));
      long outOfOrder = byOrder.values().stream().filter(OutboxOutageTest::outOfWrittenOrder).count();
      System.out.printf("OutboxOutageTest: two relays published %d rows: %d by node 32, %d by node 33; %d events on the "
          + "topic, %d distinct; relay failures %d and %d; %d of %d orders have their events on the topic in another "
          + "order than written%n", rows, publishedByOne, publishedByTwo, events.size(), perEventId.size(),
          relayFailures(one), relayFailures(two), outOfOrder, byOrder.size());
      assertThat(rows).isEqualTo(ids.size() + (ids.size() + 2) / 3);
      assertThat(perEventId).as("every row on the topic").hasSize((int) rows);
      assertThat(relayFailures(one) + relayFailures(two)).as("no relay failed, so no duplicate is allowed").isZero();
      assertThat(perEventId.entrySet()).as("event ids published more than once")
          .filteredOn(entry -> entry.getValue() > 1).isEmpty();
      assertThat(publishedByOne + publishedByTwo).as("each row counted by the one relay that published it").isEqualTo(rows);
      assertThat(outOfOrder).as("orders whose events reached the topic in another order than written (one relay at a "
          + "time publishes in feed order)").isZero();
      assertThat(publishedByOne).as("both relays took part").isPositive();
      assertThat(publishedByTwo).as("both relays took part").isPositive();
      Invariants.assertHold();
    }
  }

  /** One order's events (one partition, its key's) sorted by offset: is an event id lower than the one before it? */
  private static boolean outOfWrittenOrder(List<EventsTopic.Event> events) {
    List<EventsTopic.Event> byOffset = events.stream().sorted(java.util.Comparator.comparingLong(EventsTopic.Event::offset)).toList();
    for (int i = 1; i < byOffset.size(); i++) {
      if (byOffset.get(i).eventId() < byOffset.get(i - 1).eventId()) {
        return true;
      }
    }
    return false;
  }


  private static long unpaid(List<String> ids) {
    return Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND id IN (" + String.join(",", ids) + ")");
  }

  private static long unpublished() {
    return Sql.count("SELECT count(*) FROM outbox o WHERE " + Sql.unpublished("o"));
  }

  private static Map<String, Long> typesWaiting() {
    Map<String, Long> types = new HashMap<>();
    for (Map<String, Object> row : Sql.rows("SELECT type, count(*) AS n FROM outbox o WHERE " + Sql.unpublished("o") + " GROUP BY type")) {
      types.put((String) row.get("type"), ((Number) row.get("n")).longValue());
    }
    return types;
  }


  private static long closesByPath(TestService node, String path) {
    return node.service().stats().timeoutCloses(DueOrders.Path.valueOf(path.toUpperCase(Locale.ROOT)));
  }

  private static long relayFailures(TestService node) {
    return counter(node, Meters.OUTBOX_RELAY_FAILURES);
  }

  private static long counter(TestService node, String name) {
    return (long) node.service().stats().registry().get(name).counter().count();
  }

}
