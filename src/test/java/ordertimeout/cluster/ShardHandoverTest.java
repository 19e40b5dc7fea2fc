package ordertimeout.cluster;

import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node that stops gracefully (stop, or the drain of SIGTERM) leaves the consumer group, so that the
 * other node takes its shards within a rebalance, not after the session timeout (6 s here). A member
 * that did not leave would be evicted 4.5 to 6 s after the stop (6 s after its last heartbeat, sent
 * every 1.5 s) and the other node would notice at its next heartbeat; one that leaves is replaced
 * within the other node's heartbeat interval and a join.
 */
class ShardHandoverTest {
  private static final long SESSION_TIMEOUT_MILLIS = 6_000;
  private static final long LEFT_THE_GROUP_MILLIS = 4_000;

  @Test
  void aStoppedNodeHandsItsShardsOverBeforeTheSessionTimeout() throws Exception {
    TestDatabase.reset();
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    try (TestService first = TestService.start(cluster.forNode(41))) {
      Await.until("the first node owns every shard", Duration.ofSeconds(30), () -> first.ownedShards().size() == TestDatabase.SHARDS);
      long byStop = handOver("stop()", first, cluster.forNode(42), node -> TestService.await(node.service().stop()));
      long byDrain = handOver("drain()", first, cluster.forNode(43), node -> TestService.await(node.service().drain()));
      assertThat(byStop).as("ms from stop() until the other node owned every shard").isLessThan(LEFT_THE_GROUP_MILLIS);
      assertThat(byDrain).as("ms from drain() until the other node owned every shard").isLessThan(LEFT_THE_GROUP_MILLIS);
    }
  }

  /** Starts a second node, waits for the split, stops it with {@code stopping}; milliseconds until the first owns every shard again. */
  private static long handOver(String how, TestService first, Map<String, String> settings, Consumer<TestService> stopping)
      throws InterruptedException {
    TestService second = TestService.start(settings);
    try {
      Await.until("the shards are split between the two nodes", Duration.ofSeconds(30),
          () -> !second.ownedShards().isEmpty() && first.ownedShards().size() + second.ownedShards().size() == TestDatabase.SHARDS);
    } catch (AssertionError | RuntimeException e) {
      second.close();
      throw e;
    }
    long started = System.nanoTime();
    stopping.accept(second);
    long stopped = System.nanoTime();
    Await.until("the first node took back every shard", Duration.ofSeconds(20), () -> first.ownedShards().size() == TestDatabase.SHARDS);
    long handover = (System.nanoTime() - started) / 1_000_000;
    Await.until("the first node loaded them", Duration.ofSeconds(30), () -> first.service().ownedShards().allLoaded());
    long loaded = (System.nanoTime() - started) / 1_000_000;
    System.out.printf("ShardHandoverTest: %s took %d ms; the other node owned every shard %d ms and had loaded them %d ms "
        + "after it began (session timeout %d ms)%n", how, (stopped - started) / 1_000_000, handover, loaded, SESSION_TIMEOUT_MILLIS);
    return handover;
  }


}
