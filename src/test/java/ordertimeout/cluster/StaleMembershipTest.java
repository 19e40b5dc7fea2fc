package ordertimeout.cluster;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.kafka.client.common.TopicPartition;
import io.vertx.kafka.client.consumer.KafkaConsumer;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.LocalCodec;
import ordertimeout.bus.Revocation;
import ordertimeout.bus.ShardChange;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.LeasedOrderIds;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.LogCapture;
import ordertimeout.timer.OwnedShards;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node that left the timer group for the database's absence (decision 0044) gave up its shards at once; the close
 * of the consumer it left with may wait for a broker longer than the node waits for it, so the node can join again,
 * with a new consumer, and be given shards before the old consumer reports its revocation. That late report speaks
 * for a membership that is over: it must not drop a shard the new membership owns (Kafka would go on thinking this
 * node owns it, and no wheel and no sweep would keep its orders until the next rebalance). The revocation the
 * current membership reports as the node stops still gives its shards up.
 *
 * <p>The verticle is driven through consumers the test hands it ({@link Fake}): no broker, the callbacks called
 * when the test says, on the verticle's event loop as the Vert.x client calls them.
 */
class StaleMembershipTest {
  private static final int SHARD = 5;
  private static final int OTHER_SHARD = 9;
  private static final Duration SAFETY = Duration.ofSeconds(30);

  @Test
  void aRevocationReportedLateByTheConsumerTheNodeLeftWithDropsNoShardOfItsNewMembership() throws Exception {
    Map<String, String> settings = new ClusterSettings("127.0.0.1:9").forNode(61);
    settings.put("OT_NODE_LEASE_SECONDS", "3"); // joins again once the database answered for 1 s
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), settings::get));
    OwnedShards owned = OwnedShards.none(config.database().shards());
    NodeStats stats = new NodeStats(new SimpleMeterRegistry(), config.database().shards(), Duration.ofSeconds(60));
    LeasedOrderIds ids = new LeasedOrderIds(61, config.node().wallClock());
    List<Fake> consumers = new CopyOnWriteArrayList<>();
    List<String> revoked = new CopyOnWriteArrayList<>();

    Vertx vertx = Vertx.vertx();
    try (LogCapture log = LogCapture.start()) {
      LocalCodec.registerAll(vertx);
      vertx.eventBus().<ShardChange>consumer(Addresses.SHARDS_ASSIGNED, message -> message.reply(0));
      vertx.eventBus().<Revocation>consumer(Addresses.SHARDS_REVOKED, message -> {
        revoked.add(Arrays.toString(message.body().shards()));
        message.reply(Deadlines.EMPTY);
      });
      ShardOwnershipVerticle ownership = new ShardOwnershipVerticle(config, owned, stats, ids, () -> true,
          (unused, kafka) -> {
            Fake fake = new Fake(kafka, config.kafka().timersTopic());
            consumers.add(fake);
            return fake.consumer;
          });
      String deployment = vertx.deployVerticle(ownership).toCompletionStage().toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
      Fake first = consumers.get(0);
      first.assign(SHARD, OTHER_SHARD);
      Await.until("the node owns the shards the group gave its first consumer", SAFETY,
          () -> owned.owns(SHARD) && owned.owns(OTHER_SHARD));

      ids.databaseUnreachable(true); // the lease never taken, renewals failing: it lapsed for the database
      Await.until("the node gave up its shards and is leaving the group", SAFETY,
          () -> owned.list().length == 0 && first.closing && revoked.size() == 1);
      assertThat(revoked).as("given up when it left, before its consumer's close").containsExactly("[5, 9]");

      ids.heldUntil(Long.MAX_VALUE, System.nanoTime() + TimeUnit.HOURS.toNanos(1));
      ids.databaseUnreachable(false);
      // the first consumer's close never ends (it waits for a broker): the node stops waiting after a session timeout
      Await.until("the node joined again with a new consumer", SAFETY, () -> consumers.size() == 2);
      Fake second = consumers.get(1);
      second.assign(SHARD);
      Await.until("the new membership owns the shard", SAFETY, () -> owned.owns(SHARD));

      first.revoke(SHARD, OTHER_SHARD); // the old consumer's close gets through at last and reports its revocation
      assertThat(owned.owns(SHARD)).as("the shard the group gave the new membership, after the old one's late report")
          .isTrue();
      assertThat(owned.list()).containsExactly(SHARD);
      assertThat(log.text()).contains("consumer this node left the group with");

      second.revokeOnClose = Set.of(SHARD);
      vertx.undeploy(deployment).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertThat(owned.owns(SHARD)).as("given up when the consumer of the current membership closed at the stop")
          .isFalse();
      Await.until("the timer told to drop it", SAFETY, () -> revoked.size() == 2);
      assertThat(revoked).containsExactly("[5, 9]", "[5]");
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      for (Fake fake : consumers) {
        fake.kafka.close(Duration.ZERO);
      }
    }
  }

  /**
   * A Vert.x Kafka consumer that reaches no broker: subscribing succeeds, positions are 0, its close ends only when
   * {@link #revokeOnClose} is set (then it reports that revocation first, as the client does as it leaves), and the
   * group's callbacks run when the test calls {@link #assign} or {@link #revoke}.
   */
  private static final class Fake {
    final OwnershipConsumer kafka;
    final String topic;
    final KafkaConsumer<String, String> consumer;
    volatile Context context;
    volatile Handler<Set<TopicPartition>> assigned;
    volatile Handler<Set<TopicPartition>> revoked;
    volatile boolean closing;
    volatile Set<Integer> revokeOnClose;

    @SuppressWarnings("unchecked")
    Fake(OwnershipConsumer kafka, String topic) {
      this.kafka = kafka;
      this.topic = topic;
      this.context = Vertx.currentContext();
      this.consumer = (KafkaConsumer<String, String>) Proxy.newProxyInstance(getClass().getClassLoader(),
          new Class<?>[] {KafkaConsumer.class}, (proxy, method, args) -> switch (method.getName()) {
            case "handler", "exceptionHandler" -> proxy;
            case "partitionsAssignedHandler" -> {
              assigned = (Handler<Set<TopicPartition>>) args[0];
              yield proxy;
            }
            case "partitionsRevokedHandler" -> {
              revoked = (Handler<Set<TopicPartition>>) args[0];
              yield proxy;
            }
            case "subscribe" -> Future.succeededFuture();
            case "position" -> Future.succeededFuture(0L);
            case "close" -> close();
            case "toString" -> "fake consumer";
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            default -> throw new UnsupportedOperationException(method.getName());
          });
    }

    private Future<Void> close() {
      closing = true;
      if (revokeOnClose == null) {
        return Promise.<Void>promise().future();
      }
      revoked.handle(partitions(revokeOnClose.stream().mapToInt(Integer::intValue).toArray()));
      return Future.succeededFuture();
    }

    void assign(int... shards) throws Exception {
      onItsEventLoop(() -> assigned.handle(partitions(shards)));
    }

    void revoke(int... shards) throws Exception {
      onItsEventLoop(() -> revoked.handle(partitions(shards)));
    }

    private Set<TopicPartition> partitions(int... shards) {
      return Arrays.stream(shards).mapToObj(shard -> new TopicPartition(topic, shard))
          .collect(Collectors.toSet());
    }

    /** Runs the callback as the Vert.x client does, on the verticle's event loop, and waits for it. */
    private void onItsEventLoop(Runnable callback) throws Exception {
      CompletableFuture<Void> done = new CompletableFuture<>();
      context.runOnContext(unused -> {
        try {
          callback.run();
          done.complete(null);
        } catch (Throwable failure) {
          done.completeExceptionally(failure);
        }
      });
      done.get(30, TimeUnit.SECONDS);
    }
  }
}
