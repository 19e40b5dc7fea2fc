package ordertimeout.sweep;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.bus.LocalCodec;
import ordertimeout.close.CloseVerticle;
import ordertimeout.cluster.NodeIdLeaseVerticle;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.LeasedOrderIds;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.Pools;
import ordertimeout.store.StatusCache;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.Invariants;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.timer.OwnedShards;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.SoftAssertions.assertSoftly;

/**
 * In a cluster the lease of a node claims the shards it owns, and each node's sweep also covers the shards no live
 * lease claims for {@code sweep.unclaimedGraceSeconds} (decision 0050): while the broker is away, a node that dies
 * keeps its shards in the Kafka group, but its lease runs out in PostgreSQL. The node here is a lease, a close and a
 * sweep in cluster mode with no broker (none of them talks to one), its ownership set by hand; the other nodes are
 * lease rows written by hand.
 */
class UnclaimedShardsSweepTest {
  private static final int THIS_NODE = 1003;
  private static final int LIVE_NODE = 1001;
  private static final int DEAD_NODE = 1002;
  private static final String SKU = "SKU-UNCLAIMED";
  private static final int UNCLAIMED_GRACE_SECONDS = 10;
  private static final Duration SAFETY = Duration.ofSeconds(30);

  private Vertx vertx;
  private OwnedShards owned;
  private AppConfig config;

  @BeforeEach
  void startTheNode() throws Exception {
    TestDatabase.resetForANewNode();
    Map<String, String> settings = new ClusterSettings("127.0.0.1:9").forNode(THIS_NODE);
    settings.put("OT_NODE_LEASE_SECONDS", "30"); // renewed every 10 s: a claim seen sooner was written at once
    settings.put("OT_SWEEP_INTERVAL_SECONDS", "1");
    settings.put("OT_SWEEP_GRACE_SECONDS", "1");
    settings.put("OT_SWEEP_UNCLAIMED_GRACE_SECONDS", Integer.toString(UNCLAIMED_GRACE_SECONDS));
    settings.put("OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "500"); // a look fails behind a lock held longer
    config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), settings::get));
    NodeStats stats = new NodeStats(new SimpleMeterRegistry(), config.database().shards(), Duration.ofSeconds(60));
    owned = OwnedShards.none(config.database().shards());
    owned.add(new int[] {0, 1});
    vertx = Vertx.vertx();
    LocalCodec.registerAll(vertx);
    var database = TestDatabase.connectOptions();
    LeasedOrderIds ids = new LeasedOrderIds(THIS_NODE, config.node().wallClock());
    await(vertx.deployVerticle(new NodeIdLeaseVerticle(config, database, ids, StatusCache.OFF, owned))
        .compose(lease -> vertx.deployVerticle(new CloseVerticle(config, database, stats, StatusCache.OFF)))
        .compose(close -> vertx.deployVerticle(new SweepVerticle(config, database, owned, stats))));
  }

  @AfterEach
  void stopTheNode() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    Sql.execute("DELETE FROM node_leases WHERE node_id IN (?, ?)", LIVE_NODE, DEAD_NODE);
  }

  @Test
  void theLeaseClaimsTheShardsItsNodeOwnsAndAtOnceWhenTheyChange() {
    assertThat(claimedBy(THIS_NODE)).as("written when the lease was taken").isEqualTo("{0,1}");
    owned.add(new int[] {7});
    Await.until("the gained shard claimed", Duration.ofSeconds(5), () -> claimedBy(THIS_NODE).equals("{0,1,7}"));
    owned.remove(new int[] {0});
    Await.until("the lost shard no longer claimed", Duration.ofSeconds(5), () -> claimedBy(THIS_NODE).equals("{1,7}"));
  }

  @Test
  void theShardsNoLiveLeaseClaimsAreSweptByANodeThatDoesNotOwnThem() {
    lease(LIVE_NODE, "now() + interval '1 hour'", "{3,4}");
    lease(DEAD_NODE, "now() - interval '1 second'", "{5,6}");

    int[] expected = IntStream.range(0, TestDatabase.SHARDS).filter(shard -> shard > 1 && shard != 3 && shard != 4)
        .toArray();
    assertThat(await(deadlineStore().unclaimedShards(TestDatabase.SHARDS)))
        .as("every shard but this node's and the live node's; the dead node's among them").isEqualTo(expected);

    long inDeadNodesShard = SeedOrders.idsInShard(5, 1)[0];
    long inLiveNodesShard = SeedOrders.idsInShard(3, 1)[0];
    long dueLately = SeedOrders.idsInShard(6, 1)[0];
    SeedOrders.insert(SKU, new long[] {inDeadNodesShard, inLiveNodesShard}, -60_000, 0, null);

    Await.until("the order of the dead node's shard closed by this node's sweep", SAFETY,
        () -> "CLOSED".equals(status(inDeadNodesShard)));
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND close_reason = 'TIMEOUT'", inDeadNodesShard))
        .isEqualTo(1);
    SeedOrders.insert(SKU, new long[] {dueLately}, -2_000, 0, null); // in a shard unclaimed for long already
    Await.sleep(2000); // two more passes
    assertThat(status(inLiveNodesShard)).as("a shard a live lease claims is its node's").isEqualTo("UNPAID");
    assertThat(status(dueLately)).as("overdue by less than sweep.unclaimedGraceSeconds").isEqualTo("UNPAID");

    Sql.execute("UPDATE node_leases SET expires_at = now() - interval '1 second' WHERE node_id = ?", LIVE_NODE);
    Await.until("the order of the shard whose lease ran out closed", SAFETY,
        () -> "CLOSED".equals(status(inLiveNodesShard)));
    Await.until("the order due lately closed once past the grace", SAFETY, () -> "CLOSED".equals(status(dueLately)));
    Invariants.assertHold();
  }

  @Test
  void aShardUnclaimedOnlyForAMomentAsAtAClustersStartOrInARebalanceIsLeftToItsOwner() {
    lease(LIVE_NODE, "now() + interval '1 hour'", "{3,4}");
    long beforeTheFirstAssignment = SeedOrders.idsInShard(5, 1)[0];
    long inARebalance = SeedOrders.idsInShard(3, 1)[0];
    long unclaimedAllAlong = SeedOrders.idsInShard(6, 1)[0];
    SeedOrders.insert(SKU, new long[] {beforeTheFirstAssignment, inARebalance, unclaimedAllAlong}, -60_000, 0, null);

    Await.sleep(4000); // shard 5 unclaimed since this node's start, the group not settled yet
    lease(LIVE_NODE, "now() + interval '1 hour'", "{3,4,5}");
    Await.sleep(1000);
    lease(LIVE_NODE, "now() + interval '1 hour'", "{4,5}"); // shard 3 between its old owner and its new one
    Await.sleep(4000);
    lease(LIVE_NODE, "now() + interval '1 hour'", "{3,4,5}");
    Await.sleep(2000);
    Await.until("the order of the shard unclaimed all along closed: the sweep of unclaimed shards ran", SAFETY,
        () -> "CLOSED".equals(status(unclaimedAllAlong)));

    assertSoftly(softly -> {
      softly.assertThat(status(beforeTheFirstAssignment)).as("unclaimed only until the first assignment")
          .isEqualTo("UNPAID");
      softly.assertThat(status(inARebalance)).as("unclaimed only during a rebalance").isEqualTo("UNPAID");
    });
  }

  /** A database that fails a look now and then (a flapping proxy) must not keep a dead node's shards from the sweep. */
  @Test
  void aLookThatFailsInTheMiddleOfAStreakDoesNotPostponeTheSweep() throws Exception {
    long unclaimedAllAlong = SeedOrders.idsInShard(5, 1)[0];
    SeedOrders.insert(SKU, new long[] {unclaimedAllAlong}, -60_000, 0, null);
    long giveUpAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(3 * UNCLAIMED_GRACE_SECONDS);
    while (!"CLOSED".equals(status(unclaimedAllAlong))) {
      assertThat(System.nanoTime()).as("the order closed while a look fails every 3 s").isLessThan(giveUpAt);
      // held past a tick and the looks' lock_timeout: one look fails every 3 s, long before a streak could last
      try (Connection connection = TestDatabase.jdbc()) {
        connection.setAutoCommit(false);
        Sql.rows(connection, "LOCK TABLE node_leases IN ACCESS EXCLUSIVE MODE");
        Await.sleep(1500);
        connection.rollback();
      }
      Await.sleep(1500);
    }
  }

  private DeadlineStore deadlineStore() {
    return new DeadlineStore(Pools.shared(vertx, Pools.DEADLINES, TestDatabase.connectOptions(), 1, 1,
        config.database().deadlines()), config.node().wallClock());
  }

  private static void lease(int nodeId, String expiresAt, String shards) {
    Sql.execute("""
        INSERT INTO node_leases (node_id, holder, expires_at, id_high_water_millis, renewed_at, shards)
        VALUES (?, 'another-instance', %s, 0, now(), ?::int[])
        ON CONFLICT (node_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
          shards = EXCLUDED.shards""".formatted(expiresAt), nodeId, shards);
  }

  private static String claimedBy(int nodeId) {
    return (String) Sql.rows("SELECT shards::text AS shards FROM node_leases WHERE node_id = ?", nodeId).get(0)
        .get("shards");
  }

  private static String status(long id) {
    return (String) Sql.rows("SELECT status FROM orders WHERE id = ?", id).get(0).get("status");
  }

  private static <T> T await(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
