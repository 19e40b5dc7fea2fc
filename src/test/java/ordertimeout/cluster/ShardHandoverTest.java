package ordertimeout.cluster;

import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.MemberDescription;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node that stops gracefully (stop, or the drain of SIGTERM) leaves the consumer group, so that the
 * other node takes its shards within a rebalance, not after the session timeout. The check is on what
 * the broker says: once the stop has returned, the stopped node is no longer a member of the group.
 * A member that did not leave would stay one until the broker evicts it, at the earliest the session
 * timeout (30 s here) less a heartbeat interval (3 s) after the stop; the handover time is only
 * compared with that, as a safety net.
 */
class ShardHandoverTest {
  private static final int SESSION_TIMEOUT_MILLIS = 30_000;
  private static final long EARLIEST_EVICTION_MILLIS = SESSION_TIMEOUT_MILLIS - SESSION_TIMEOUT_MILLIS / 10;

  @Test
  void aStoppedNodeHandsItsShardsOverBeforeTheSessionTimeout() throws Exception {
    TestDatabase.reset();
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    try (TestService first = TestService.start(node(cluster, 41)); Admin admin = KafkaBroker.shared().admin()) {
      Await.until("the first node owns every shard", Duration.ofSeconds(30), () -> first.ownedShards().size() == TestDatabase.SHARDS);
      long byStop = handOver("stop()", admin, first, node(cluster, 42), node -> TestService.await(node.service().stop()));
      long byDrain = handOver("drain()", admin, first, node(cluster, 43), node -> TestService.await(node.service().drain()));
      assertThat(byStop).as("ms from stop() until the other node owned every shard").isLessThan(EARLIEST_EVICTION_MILLIS);
      assertThat(byDrain).as("ms from drain() until the other node owned every shard").isLessThan(EARLIEST_EVICTION_MILLIS);
    }
  }

  private static Map<String, String> node(ClusterSettings cluster, int nodeId) {
    Map<String, String> settings = new HashMap<>(cluster.forNode(nodeId));
    settings.put("OT_KAFKA_SESSION_TIMEOUT_MILLIS", Integer.toString(SESSION_TIMEOUT_MILLIS));
    return settings;
  }

  /**
   * Starts a second node, waits for the split, stops it with {@code stopping}, checks that it left the group;
   * milliseconds until the first owns every shard again.
   */
  private static long handOver(String how, Admin admin, TestService first, Map<String, String> settings, Consumer<TestService> stopping)
      throws Exception {
    String group = settings.get("OT_KAFKA_GROUP_ID");
    String firstMember = clientId(first);
    TestService second = TestService.start(settings);
    String secondMember = clientId(second);
    try {
      Await.until("the shards are split between the two nodes", Duration.ofSeconds(30),
          () -> !second.ownedShards().isEmpty() && first.ownedShards().size() + second.ownedShards().size() == TestDatabase.SHARDS);
      assertThat(members(admin, group)).as("members of the group with both nodes up").contains(firstMember, secondMember);
    } catch (AssertionError | RuntimeException e) {
      second.close();
      throw e;
    }
    long started = System.nanoTime();
    stopping.accept(second);
    long stopped = System.nanoTime();
    List<String> membersAfterStop = members(admin, group);
    long askedMillis = (System.nanoTime() - started) / 1_000_000;
    assertThat(membersAfterStop).as("members of the group once %s returned (asked %d ms after it began): the node left, it was "
        + "not left behind for the broker to evict", how, askedMillis).doesNotContain(secondMember).contains(firstMember);
    Await.until("the first node took back every shard", Duration.ofSeconds(60), () -> first.ownedShards().size() == TestDatabase.SHARDS);
    long handover = (System.nanoTime() - started) / 1_000_000;
    Await.until("the first node loaded them", Duration.ofSeconds(60), () -> first.service().ownedShards().allLoaded());
    long loaded = (System.nanoTime() - started) / 1_000_000;
    System.out.printf("ShardHandoverTest: %s took %d ms and left the group; the other node owned every shard %d ms and had loaded "
        + "them %d ms after it began (session timeout %d ms)%n", how, (stopped - started) / 1_000_000, handover, loaded, SESSION_TIMEOUT_MILLIS);
    return handover;
  }

  /** The client id of the node's timer consumer, as the broker lists group members. */
  private static String clientId(TestService node) {
    return "order-timeout-" + node.config().node().id() + "-shards";
  }

  private static List<String> members(Admin admin, String group) throws Exception {
    return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get()
        .members().stream().map(MemberDescription::clientId).toList();
  }

}
