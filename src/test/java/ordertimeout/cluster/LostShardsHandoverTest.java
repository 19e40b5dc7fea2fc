package ordertimeout.cluster;

import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.EventsTopic;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node cut off from the broker for a session timeout is dropped by the group, which gives its shards to others; the
 * node hears it only once it reaches the broker again (the consumer reports the partitions lost), and has meanwhile
 * taken new orders on those shards, whose timers only its wheel holds (decision 0034, 0025). When it hears, every timer
 * its wheel holds for them goes to their partitions, for the new owners: the fan-out's record of its own timers keeps
 * only the last session timeout.
 *
 * <p>The group drops the node here because the test removes it (what the broker does when a session expires), after
 * the orders' timers have been kept longer than a session timeout: the timers that reach the partitions are the
 * wheel's. The node, alone in its group, is given its shards back and loads them again.
 */
class LostShardsHandoverTest {
  private static final int SESSION_TIMEOUT_MILLIS = 6_000; // the least the configuration accepts
  private static final int ORDERS = 20;
  private static final int TIMEOUT_SECONDS = 120;

  @Test
  void theTimersTheWheelHoldsForShardsLostGoToTheirPartitions() throws Exception {
    TestDatabase.reset();
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    Map<String, String> settings = new HashMap<>(cluster.forNode(54));
    settings.put("OT_KAFKA_SESSION_TIMEOUT_MILLIS", Integer.toString(SESSION_TIMEOUT_MILLIS));
    settings.put("OT_SWEEP_GRACE_SECONDS", "60");
    try (TestService node = TestService.start(settings); Admin admin = KafkaBroker.shared().admin()) {
      Await.until("the node owns and loaded every shard", Duration.ofSeconds(30),
          () -> node.ownedShards().size() == TestDatabase.SHARDS && node.service().ownedShards().allLoaded());
      node.api().setStock("SKU-LOST", 1_000);
      List<String> ids = node.api().createOrders(ORDERS, TIMEOUT_SECONDS, "SKU-LOST");
      Thread.sleep(SESSION_TIMEOUT_MILLIS + 1_000); // the fan-out keeps its own timers for a session timeout only
      assertThat(timerLines(cluster)).as("timer lines while the node owns every shard").isEmpty();

      long removing = System.nanoTime();
      String group = settings.get("OT_KAFKA_GROUP_ID");
      admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions())
          .all().get(20, TimeUnit.SECONDS);

      List<Map<String, Object>> orders = Sql.rows("SELECT id, shard, "
          + "floor(extract(epoch FROM close_at) * 1000)::bigint AS close_at, "
          + "floor(extract(epoch FROM remind_at) * 1000)::bigint AS remind_at FROM orders");
      assertThat(orders).hasSize(ORDERS);
      Await.until("the close and reminder timers of every order on its shard's partition", Duration.ofSeconds(30),
          () -> {
            List<TimerLine> onTopic = timerLines(cluster);
            return orders.stream().allMatch(order -> onTopic.stream().filter(line -> line.orderId() == id(order)
                && line.partition() == ((Number) order.get("shard")).intValue()).count() >= 2);
          });
      long heardMillis = (System.nanoTime() - removing) / 1_000_000;
      List<TimerLine> lines = timerLines(cluster);
      for (Map<String, Object> order : orders) {
        List<TimerLine> ofOrder = lines.stream().filter(line -> line.orderId() == id(order)).toList();
        long closeAt = ((Number) order.get("close_at")).longValue();
        long remindAt = ((Number) order.get("remind_at")).longValue();
        assertThat(ofOrder).as("timer lines of order %d", id(order)).allMatch(line -> line.kind().equals("schedule"))
            .anyMatch(line -> line.closeAt() >= closeAt && line.closeAt() < closeAt + 11 && line.remindAt() == -1)
            .anyMatch(line -> line.remindAt() >= remindAt && line.remindAt() < remindAt + 11 && line.closeAt() == -1);
      }
      assertThat(ids).hasSize(ORDERS);

      Await.until("the node, alone in its group, owns and loaded every shard again", Duration.ofSeconds(30),
          () -> node.ownedShards().size() == TestDatabase.SHARDS && node.service().ownedShards().allLoaded());
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).isEqualTo(ORDERS);
      System.out.printf("LostShardsHandoverTest: %d timer lines on the topic, read %d ms after the group removed the "
          + "node%n", lines.size(), heardMillis);
    }
  }

  private static long id(Map<String, Object> order) {
    return ((Number) order.get("id")).longValue();
  }

  private record TimerLine(String kind, long orderId, long closeAt, long remindAt, int partition) {}

  private static List<TimerLine> timerLines(ClusterSettings cluster) {
    List<TimerLine> lines = new ArrayList<>();
    String topic = cluster.timersTopic();
    for (ConsumerRecord<String, String> record : EventsTopic.records(cluster.bootstrapServers(), topic)) {
      for (String line : record.value().split("\n")) {
        String[] fields = line.split(" ");
        boolean schedule = fields[0].equals("schedule");
        lines.add(new TimerLine(fields[0], Long.parseLong(fields[1]), schedule ? Long.parseLong(fields[2]) : -1,
            schedule ? Long.parseLong(fields[3]) : -1, record.partition()));
      }
    }
    return lines;
  }
}
