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
 * Two nodes in one consumer group split the shards between them; a timer created on either node
 * reaches its shard's owner through Kafka and closes on time from that owner's wheel (not the sweep);
 * when a node leaves, the other takes its shards and closes their orders. The outbox relay publishes
 * every event once per event id with its headers.
 */
class ShardOwnershipTest {

  @Test
  void nodesSplitTheShardsAndTimersReachTheirOwner() throws Exception {
    TestDatabase.reset();
    KafkaBroker broker = KafkaBroker.shared();
    ClusterSettings cluster = new ClusterSettings(broker.bootstrapServers());
    try (TestService first = TestService.start(cluster.forNode(21))) {
      Await.until("the first node owns every shard", Duration.ofSeconds(30), () -> first.ownedShards().size() == TestDatabase.SHARDS);
      first.api().setStock("SKU-K", 1_000_000);

      List<String> ids = new ArrayList<>();
      Set<String> paid = new HashSet<>();
      try (TestService second = TestService.start(cluster.forNode(22))) {
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
        Await.until("every unpaid order closed", Duration.ofSeconds(20),
            () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
        long closed = ids.size() - paid.size();
        assertThat(wheelCloses(first) + wheelCloses(second)).as("closed by the owners' wheels, none by the sweep").isEqualTo(closed);
        assertThat(wheelCloses(first)).isPositive();
        assertThat(wheelCloses(second)).isPositive();
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE closed_at - close_at > interval '1 second'")).isZero();
      }

      Await.until("the first node took back every shard of the node that left", Duration.ofSeconds(30),
          () -> first.ownedShards().size() == TestDatabase.SHARDS && ready(first));
      List<String> later = first.api().createOrders(100, 2, "SKU-K");
      Await.until("the later orders closed", Duration.ofSeconds(15),
          () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE closed_at - close_at > interval '1 second'")).isZero();
      Invariants.assertHold();

      Await.until("the outbox relayed", Duration.ofSeconds(20),
          () -> Sql.count("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0);
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

}
