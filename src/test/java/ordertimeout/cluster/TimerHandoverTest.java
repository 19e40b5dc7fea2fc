package ordertimeout.cluster;

import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.EventsTopic;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import ordertimeout.support.WheelFires;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The timers of a node's own shards go only to its wheel, not to Kafka; when the node loses shards, the
 * timers of theirs it handed out in the last session timeout go to Kafka for the new owner (which may have
 * loaded the shard from the database before they were committed, had the node heard of the loss late).
 * Here every order was committed before the new owner's load, so the copies change nothing: the test
 * checks that exactly they travel, and that every order still closes once, on time, by its owner's wheel.
 */
class TimerHandoverTest {
  private static final int ORDERS = 200;
  private static final int PAID = 40;
  /**
   * The session timeout is also how long a node keeps its local timers for a handover; a rebalance takes about two
   * heartbeats (a tenth of it each). Both long enough for the creates, the second node's start, the rebalance and the
   * load on a loaded machine; checked, not assumed.
   */
  private static final int SESSION_TIMEOUT_SECONDS = 60;
  private static final int TIMEOUT_SECONDS = 50;

  @Test
  void ownTimersStayLocalUntilTheirShardMoves() throws Exception {
    TestDatabase.reset();
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    try (TestService first = TestService.start(node(cluster, 51))) {
      WheelFires firedByFirst = WheelFires.of(first.vertx());
      Await.until("the first node owns and loaded every shard", Duration.ofSeconds(30),
          () -> first.ownedShards().size() == TestDatabase.SHARDS && first.service().ownedShards().allLoaded());
      first.api().setStock("SKU-H", 100_000);
      long created = System.nanoTime();
      List<String> ids = first.api().createOrders(ORDERS, TIMEOUT_SECONDS, "SKU-H");
      Set<Long> paid = new HashSet<>();
      for (String id : ids.subList(0, PAID)) {
        assertThat(first.api().pay(id).status()).isEqualTo(200);
        paid.add(Long.parseLong(id));
      }
      assertThat(timerLines(cluster)).as("timer lines on Kafka while the node owns every shard").isEmpty();

      try (TestService second = TestService.start(node(cluster, 52))) {
        WheelFires firedBySecond = WheelFires.of(second.vertx());
        Await.until("the shards are split and loaded", Duration.ofSeconds(60),
            () -> !second.ownedShards().isEmpty() && first.ownedShards().size() + second.ownedShards().size() == TestDatabase.SHARDS
                && first.service().ownedShards().allLoaded() && second.service().ownedShards().allLoaded());
        long splitMillis = (System.nanoTime() - created) / 1_000_000;
        assertThat(splitMillis).as("ms from the first create until the split was loaded (the orders must still be open, "
            + "their timers still kept)").isLessThan(TIMEOUT_SECONDS * 1000L - 5_000);

        Set<Integer> moved = second.ownedShards();
        Map<Long, Integer> shardOf = new HashMap<>();
        Sql.rows("SELECT id, shard FROM orders")
            .forEach(row -> shardOf.put(((Number) row.get("id")).longValue(), ((Number) row.get("shard")).intValue()));
        Set<Long> ofMoved = shardOf.keySet().stream().filter(id -> moved.contains(shardOf.get(id))).collect(Collectors.toSet());
        assertThat(ofMoved).as("orders on the shards that moved").isNotEmpty();
        Set<Long> paidOfMoved = paid.stream().filter(ofMoved::contains).collect(Collectors.toSet());

        List<TimerLine> lines = timerLines(cluster);
        assertThat(lines.stream().filter(line -> line.kind().equals("schedule")).map(TimerLine::orderId).collect(Collectors.toSet()))
            .as("orders whose schedule the first node sent to Kafka when it lost their shards").isEqualTo(ofMoved);
        assertThat(lines.stream().filter(line -> line.kind().equals("cancel")).map(TimerLine::orderId).collect(Collectors.toSet()))
            .as("orders whose cancel it sent").isEqualTo(paidOfMoved);
        assertThat(lines).as("each on its shard's partition").allMatch(line -> shardOf.get(line.orderId()) == line.partition());
        for (long id : paidOfMoved) {
          List<String> kinds = lines.stream().filter(line -> line.orderId() == id).map(TimerLine::kind).toList();
          assertThat(kinds).as("the lines of paid order %d, in order", id).containsExactly("schedule", "cancel");
        }

        Await.until("every unpaid order closed", Duration.ofSeconds(TIMEOUT_SECONDS + 30),
            () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
        Set<Long> timedOut = new HashSet<>(shardOf.keySet());
        timedOut.removeAll(paid);
        Set<Long> timedOutOfMoved = timedOut.stream().filter(ofMoved::contains).collect(Collectors.toSet());
        Set<Long> timedOutOfFirst = new HashSet<>(timedOut);
        timedOutOfFirst.removeAll(ofMoved);
        assertThat(firedBySecond.ids()).as("fired by the new owner's wheel").containsAll(timedOutOfMoved);
        assertThat(firedByFirst.ids()).as("fired by the first node's wheel").containsAll(timedOutOfFirst)
            .doesNotContainAnyElementsOf(timedOutOfMoved);
        Await.until("both nodes counted their closes", Duration.ofSeconds(10),
            () -> closes(first, DueOrders.Path.WHEEL) + closes(second, DueOrders.Path.WHEEL) >= timedOut.size());
        assertThat(closes(first, DueOrders.Path.SWEEP) + closes(second, DueOrders.Path.SWEEP)).as("closed by the sweep").isZero();
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED' AND closed_at < close_at")).as("closed early").isZero();
        Invariants.assertHold();
        System.out.printf("TimerHandoverTest: %d of %d orders on the %d shards that moved; %d timer lines handed over; split loaded "
            + "%d ms after the first create%n", ofMoved.size(), ORDERS, moved.size(), lines.size(), splitMillis);
      }
    }
  }

  private record TimerLine(String kind, long orderId, int partition) {}

  private static List<TimerLine> timerLines(ClusterSettings cluster) {
    List<TimerLine> lines = new ArrayList<>();
    for (ConsumerRecord<String, String> record : EventsTopic.records(cluster.bootstrapServers(), cluster.timersTopic())) {
      for (String line : record.value().split("\n")) {
        String[] fields = line.split(" ");
        lines.add(new TimerLine(fields[0], Long.parseLong(fields[1]), record.partition()));
      }
    }
    return lines;
  }

  private static long closes(TestService node, DueOrders.Path path) {
    return node.service().stats().timeoutCloses(path);
  }

  private static Map<String, String> node(ClusterSettings cluster, int nodeId) {
    Map<String, String> settings = new HashMap<>(cluster.forNode(nodeId));
    settings.put("OT_KAFKA_SESSION_TIMEOUT_MILLIS", Integer.toString(SESSION_TIMEOUT_SECONDS * 1000));
    settings.put("OT_SWEEP_GRACE_SECONDS", "60");
    return settings;
  }
}
