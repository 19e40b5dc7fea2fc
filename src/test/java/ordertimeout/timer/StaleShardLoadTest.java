package ordertimeout.timer;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.LocalCodec;
import ordertimeout.bus.Revocation;
import ordertimeout.bus.ShardChange;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.metrics.Meters;
import ordertimeout.metrics.NodeStats;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.Invariants;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A load of shards is for one gain of them ({@link ShardChange#gain()}, {@link OwnedShards#add}). One still reading
 * when a shard was lost and given back read the database before the orders another node took on it meanwhile and
 * before the deadlines moved since: none of its timers of that shard may go into the wheel, where they would replace
 * those of the later gain's load or of Kafka. Its timers of the shards this node still owns by that gain go in.
 *
 * <p>The timer verticle is driven by the messages the shard ownership sends it, with no broker; the orders are due
 * in an hour, so what the wheel holds is its pending count.
 */
class StaleShardLoadTest {
  private static final String SKU = "SKU-STALE-LOAD";
  private static final int SHARD = 12;
  private static final int GAINED = 30;
  private static final int ORDERS = 5;
  private static final Duration SAFETY = Duration.ofSeconds(60);

  private Vertx vertx;
  private SimpleMeterRegistry registry;
  private NodeStats stats;
  private OwnedShards owned;

  @BeforeEach
  void deployTheTimer() throws Exception {
    TestDatabase.reset();
    Map<String, String> settings = new ClusterSettings("127.0.0.1:9").forNode(63);
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), settings::get));
    registry = new SimpleMeterRegistry();
    stats = new NodeStats(registry, config.database().shards(), Duration.ofSeconds(60));
    owned = OwnedShards.none(config.database().shards());
    vertx = Vertx.vertx();
    LocalCodec.registerAll(vertx);
    vertx.deployVerticle(new TimerVerticle(config, TestDatabase.connectOptions(), stats, owned))
        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @AfterEach
  void closeTheNode() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @Test
  void aLoadForAnEarlierGainOfTheShardPutsNoneOfItsTimersIntoTheWheel() throws Exception {
    SeedOrders.insert(SKU, SeedOrders.idsInShard(SHARD, ORDERS), 3_600_000, 1000, null);
    long stale = owned.add(new int[] {SHARD});
    owned.remove(new int[] {SHARD});
    long last = owned.add(new int[] {SHARD});

    assigned(new int[] {SHARD}, stale).get(30, TimeUnit.SECONDS);
    assertThat(pending(SHARD)).as("timers of a load for a gain this node no longer owns the shard by").isZero();
    assertThat(owned.isLoaded(SHARD)).isFalse();

    assigned(new int[] {SHARD}, last).get(30, TimeUnit.SECONDS);
    assertThat(pending(SHARD)).as("timers of the load for the last gain").isEqualTo(ORDERS);
    assertThat(owned.isLoaded(SHARD)).isTrue();
    Invariants.assertHold();
  }

  /**
   * A rebalance that leaves this node a shard it kept reads that shard's recent orders again (decision 0032). The read
   * waits here for a lock on {@code orders} while the shard is lost and given back.
   */
  @Test
  void aCatchUpOfAKeptShardLostAndGivenBackWhileItReadPutsNoneOfItsTimersIntoTheWheel() throws Exception {
    assigned(new int[] {SHARD}, owned.add(new int[] {SHARD})).get(30, TimeUnit.SECONDS);
    // after the load, as a node that died before its timers travelled leaves them
    SeedOrders.insert(SKU, SeedOrders.idsInShard(SHARD, ORDERS), 3_600_000, 1000, null);

    CompletableFuture<Object> gainedLoaded;
    try (Connection locking = TestDatabase.jdbc(); Statement statement = locking.createStatement()) {
      locking.setAutoCommit(false);
      statement.execute("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE");
      gainedLoaded = assigned(new int[] {GAINED}, owned.add(new int[] {GAINED}));
      Await.until("the catch-up of the kept shard waits for the lock", SAFETY, () -> Sql.count(
          "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%shard = ANY%'") == 1);
      owned.remove(new int[] {SHARD});
      vertx.eventBus().request(Addresses.SHARDS_REVOKED, new Revocation(new int[] {SHARD}, false, Deadlines.EMPTY))
          .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      owned.add(new int[] {SHARD});
      locking.commit();
    }
    gainedLoaded.get(30, TimeUnit.SECONDS);
    Await.until("the catch-up read the kept shard's orders", SAFETY,
        () -> registry.get(Meters.WHEEL_CAUGHT_UP).counter().count() == ORDERS);
    assertThat(pending(SHARD)).as("timers of a catch-up that began before the shard was lost and given back").isZero();
    Invariants.assertHold();
  }

  private CompletableFuture<Object> assigned(int[] shards, long gain) {
    ShardChange change = new ShardChange(shards, gain, System.currentTimeMillis());
    return vertx.eventBus().request(Addresses.SHARDS_ASSIGNED, change).map(Message::body)
        .toCompletionStage().toCompletableFuture();
  }

  private long pending(int shard) {
    return stats.snapshot().pendingTimersByShard()[shard];
  }
}
