package ordertimeout.cluster;

import io.vertx.core.json.JsonObject;
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
 * Two nodes in one consumer group split the shards between them; each node creates its orders on shards it owns
 * (decision 0034), so their timers fire in its own wheel, and only there (not in the other node's, not through the
 * sweep); when a node leaves, the other takes its shards and its wheel closes their orders. The outbox relay
 * publishes every event once per event id with its headers.
 */
class ShardOwnershipTest {
  /** The sweep only as a safety net: a close it makes would mean a wheel missed a deadline by a minute. */
  private static final String SWEEP_GRACE_SECONDS = "60";

  @Test
  void nodesSplitTheShardsAndTimersReachTheirOwner() throws Exception {
    TestDatabase.reset();
    KafkaBroker broker = KafkaBroker.shared();
    ClusterSettings cluster = new ClusterSettings(broker.bootstrapServers());
    try (TestService first = TestService.start(wheelsOnly(cluster.forNode(21)))) {
      WheelFires firedByFirst = WheelFires.of(first.vertx());
      Await.until("the first node owns every shard", Duration.ofSeconds(30), () -> first.ownedShards().size() == TestDatabase.SHARDS);
      first.api().setStock("SKU-K", 1_000_000);

      List<String> ids = new ArrayList<>();
      Set<String> paid = new HashSet<>();
      try (TestService second = TestService.start(wheelsOnly(cluster.forNode(22)))) {
        WheelFires firedBySecond = WheelFires.of(second.vertx());
        Await.until("the shards are split between the two nodes", Duration.ofSeconds(30),
            () -> !second.ownedShards().isEmpty() && first.ownedShards().size() + second.ownedShards().size() == TestDatabase.SHARDS);
        Set<Integer> both = new HashSet<>(first.ownedShards());
        both.retainAll(second.ownedShards());
        assertThat(both).as("no shard owned twice").isEmpty();
        Await.until("both nodes loaded their shards", Duration.ofSeconds(30), () -> ready(first) && ready(second));

        ids.addAll(first.api().createOrders(120, 3, "SKU-K"));
        ids.addAll(second.api().createOrders(120, 3, "SKU-K"));
        // the orders to pay get a long timeout: on a busy machine creating the others can take longer than 3 s,
        // and a pay that came after the close would answer 409
        List<String> toPay = new ArrayList<>(first.api().createOrders(30, 600, "SKU-K"));
        toPay.addAll(second.api().createOrders(30, 600, "SKU-K"));
        ids.addAll(toPay);
        for (int i = 0; i < toPay.size(); i++) {
          TestService payer = i % 2 == 0 ? first : second;
          assertThat(payer.api().pay(toPay.get(i)).status()).isEqualTo(200);
          paid.add(toPay.get(i));
        }
        Await.until("every unpaid order closed", Duration.ofSeconds(60),
            () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
        long closed = ids.size() - paid.size();
        // each timed-out order fired in the wheel of its shard's owner and in no other: the node that created it
        Set<Integer> ownedBySecond = second.ownedShards();
        Map<Long, Integer> shardOf = new HashMap<>();
        Sql.rows("SELECT id, shard FROM orders WHERE close_reason = 'TIMEOUT'")
            .forEach(row -> shardOf.put(((Number) row.get("id")).longValue(), ((Number) row.get("shard")).intValue()));
        assertThat(shardOf).hasSize((int) closed);
        Set<Long> ofSecond = shardOf.keySet().stream().filter(id -> ownedBySecond.contains(shardOf.get(id))).collect(Collectors.toSet());
        Set<Long> ofFirst = new HashSet<>(shardOf.keySet());
        ofFirst.removeAll(ofSecond);
        Set<Long> createdOnFirst = ids.subList(0, 120).stream().map(Long::parseLong).collect(Collectors.toSet());
        Set<Long> createdOnSecond = ids.subList(120, 240).stream().map(Long::parseLong).collect(Collectors.toSet());
        assertThat(firedByFirst.ids()).as("fired by the first node's wheel: the orders of its shards").containsAll(ofFirst);
        assertThat(firedBySecond.ids()).as("fired by the second node's wheel: the orders of its shards").containsAll(ofSecond);
        assertThat(firedByFirst.ids()).as("the first node's wheel fired none of the second's").doesNotContainAnyElementsOf(ofSecond);
        assertThat(firedBySecond.ids()).as("the second node's wheel fired none of the first's").doesNotContainAnyElementsOf(ofFirst);
        long crossedOneWay = ofSecond.stream().filter(createdOnFirst::contains).count();
        long crossedOtherWay = ofFirst.stream().filter(createdOnSecond::contains).count();
        assertThat(crossedOneWay).as("orders created on the first node for the second's shards").isZero();
        assertThat(crossedOtherWay).as("orders created on the second node for the first's shards").isZero();
        assertThat(ofFirst).as("timed-out orders on the first node's shards").isNotEmpty();
        assertThat(ofSecond).as("timed-out orders on the second node's shards").isNotEmpty();
        Await.until("both nodes counted their closes", Duration.ofSeconds(10), () -> wheelCloses(first) + wheelCloses(second) >= closed);
        assertThat(wheelCloses(first) + wheelCloses(second)).as("closed by the owners' wheels").isEqualTo(closed);
        assertThat(sweepCloses(first) + sweepCloses(second)).as("closed by the sweep").isZero();
        System.out.printf("ShardOwnershipTest: %d orders timed out: %d on the first node's shards, %d on the second's; %d and %d of "
                + "them were created on the other node; worst lateness %d ms%n",
            closed, ofFirst.size(), ofSecond.size(), crossedOtherWay, crossedOneWay, worstLatenessMillis());
      }

      Await.until("the first node took back every shard of the node that left", Duration.ofSeconds(30),
          () -> first.ownedShards().size() == TestDatabase.SHARDS && ready(first));
      long wheelBefore = wheelCloses(first);
      List<String> later = first.api().createOrders(100, 2, "SKU-K");
      Await.until("the later orders closed", Duration.ofSeconds(60),
          () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
      Set<Long> laterIds = later.stream().map(Long::parseLong).collect(Collectors.toSet());
      assertThat(firedByFirst.ids()).as("the later orders, on every shard, fired in the first node's wheel").containsAll(laterIds);
      Await.until("the first node counted their closes", Duration.ofSeconds(10), () -> wheelCloses(first) - wheelBefore >= later.size());
      assertThat(wheelCloses(first) - wheelBefore).as("the later orders closed by the first node's wheel").isEqualTo(later.size());
      assertThat(sweepCloses(first)).as("closed by the sweep").isZero();
      Invariants.assertHold();

      Await.until("the outbox relayed", Duration.ofSeconds(20),
          () -> Sql.count("SELECT count(*) FROM outbox o WHERE " + Sql.unpublished("o")) == 0);
      List<EventsTopic.Event> events = EventsTopic.readAll(cluster.bootstrapServers(), cluster.eventsTopic());
      Map<Long, EventsTopic.Event> byEventId = new HashMap<>();
      events.forEach(event -> byEventId.putIfAbsent(event.eventId(), event));
      assertThat(byEventId).hasSize((int) Sql.count("SELECT count(*) FROM outbox"));
      Map<String, Long> closedEvents = byEventId.values().stream().filter(event -> event.type().equals("ORDER_CLOSED"))
          .collect(Collectors.groupingBy(EventsTopic.Event::orderId, Collectors.counting()));
      assertThat(closedEvents.keySet()).hasSize(ids.size() - paid.size() + later.size());
      assertThat(closedEvents.values()).allMatch(count -> count == 1);
      for (EventsTopic.Event event : byEventId.values()) {
        assertThat(new JsonObject(event.payload()).getString("orderId")).isEqualTo(event.orderId());
      }
      System.out.printf("ShardOwnershipTest: %d events on the topic, %d distinct event ids%n", events.size(), byEventId.size());
    }
  }



  private static boolean ready(TestService node) {
    return node.service().ownedShards().allLoaded();
  }

  private static long wheelCloses(TestService node) {
    return node.service().stats().timeoutCloses(DueOrders.Path.WHEEL);
  }

  private static long sweepCloses(TestService node) {
    return node.service().stats().timeoutCloses(DueOrders.Path.SWEEP);
  }

  private static Map<String, String> wheelsOnly(Map<String, String> settings) {
    Map<String, String> all = new HashMap<>(settings);
    all.put("OT_SWEEP_GRACE_SECONDS", SWEEP_GRACE_SECONDS);
    return all;
  }

  private static long worstLatenessMillis() {
    Object worst = Sql.rows("SELECT coalesce(max(extract(epoch FROM closed_at - close_at) * 1000), 0)::bigint AS worst FROM orders "
        + "WHERE close_reason = 'TIMEOUT'").get(0).get("worst");
    return ((Number) worst).longValue();
  }

}
