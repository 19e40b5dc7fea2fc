package ordertimeout.cluster;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
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
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
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
      waitFor("the first node owns every shard", Duration.ofSeconds(30), () -> owned(first).size() == TestDatabase.SHARDS);
      first.api().setStock("SKU-K", 1_000_000);

      List<String> ids = new ArrayList<>();
      Set<String> paid = new HashSet<>();
      try (TestService second = TestService.start(cluster.forNode(22))) {
        waitFor("the shards are split between the two nodes", Duration.ofSeconds(30),
            () -> !owned(second).isEmpty() && owned(first).size() + owned(second).size() == TestDatabase.SHARDS);
        Set<Integer> both = new HashSet<>(owned(first));
        both.retainAll(owned(second));
        assertThat(both).as("no shard owned twice").isEmpty();
        waitFor("both nodes loaded their shards", Duration.ofSeconds(30), () -> ready(first) && ready(second));

        ids.addAll(createOrders(first, 120, 3));
        ids.addAll(createOrders(second, 120, 3));
        // the orders to pay get a long timeout: on a busy machine creating the others can take longer than 3 s,
        // and a pay that came after the close would answer 409
        List<String> toPay = new ArrayList<>(createOrders(first, 30, 600));
        toPay.addAll(createOrders(second, 30, 600));
        ids.addAll(toPay);
        for (int i = 0; i < toPay.size(); i++) {
          TestService payer = i % 2 == 0 ? first : second;
          assertThat(payer.api().pay(toPay.get(i)).status()).isEqualTo(200);
          paid.add(toPay.get(i));
        }
        waitFor("every unpaid order closed", Duration.ofSeconds(20),
            () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
        long closed = ids.size() - paid.size();
        assertThat(wheelCloses(first) + wheelCloses(second)).as("closed by the owners' wheels, none by the sweep").isEqualTo(closed);
        assertThat(wheelCloses(first)).isPositive();
        assertThat(wheelCloses(second)).isPositive();
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE closed_at - close_at > interval '1 second'")).isZero();
      }

      waitFor("the first node took back every shard of the node that left", Duration.ofSeconds(30),
          () -> owned(first).size() == TestDatabase.SHARDS && ready(first));
      List<String> later = createOrders(first, 100, 2);
      waitFor("the later orders closed", Duration.ofSeconds(15),
          () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE closed_at - close_at > interval '1 second'")).isZero();
      Invariants.assertHold();

      waitFor("the outbox relayed", Duration.ofSeconds(20),
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

  private static List<String> createOrders(TestService node, int count, int timeoutSeconds) {
    List<String> ids = new ArrayList<>();
    for (int chunk = 0; chunk < count; chunk += 50) {
      List<CompletableFuture<Api.Response>> creates = new ArrayList<>();
      for (int i = chunk; i < Math.min(count, chunk + 50); i++) {
        JsonObject body = new JsonObject().put("userId", "u-" + (i % 40)).put("timeoutSeconds", timeoutSeconds)
            .put("items", new JsonArray().add(new JsonObject().put("sku", "SKU-K").put("qty", 1)));
        creates.add(node.api().createOrderAsync(UUID.randomUUID().toString(), body));
      }
      for (CompletableFuture<Api.Response> create : creates) {
        Api.Response response = create.join();
        assertThat(response.status()).as(response.body()).isEqualTo(201);
        ids.add(response.json().getString("id"));
      }
    }
    return ids;
  }

  private static Set<Integer> owned(TestService node) {
    JsonArray shards = node.service().stats().toJson().getJsonArray("ownedShards");
    return shards.stream().map(shard -> ((Number) shard).intValue()).collect(Collectors.toSet());
  }

  private static boolean ready(TestService node) {
    return node.service().stats().toJson().getBoolean("wheelLoaded");
  }

  private static long wheelCloses(TestService node) {
    return node.service().stats().toJson().getJsonObject("timeoutClosesByPath").getLong("wheel");
  }

  private static void waitFor(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("timed out after %s waiting until %s", timeout, what).isLessThan(deadline);
      Thread.sleep(50);
    }
  }
}
