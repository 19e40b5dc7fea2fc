package ordertimeout.cluster;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.kafka.client.consumer.KafkaConsumer;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.kafka.KafkaClients;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.LeasedOrderIds;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.LogCapture;
import ordertimeout.timer.OwnedShards;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Joining the timer group makes a Kafka consumer, which resolves the bootstrap hosts: a blocking lookup that throws
 * when none resolves. It is made off the event loop; a consumer that cannot be made is logged (once a minute, not at
 * every try) and tried again; one made after the verticle stopped is closed, not left open. No broker: the consumers
 * the verticle makes here never connect.
 */
class ShardOwnershipJoinTest {
  private static final Duration SAFETY = Duration.ofSeconds(30);

  @Test
  void aBrokerHostThatDoesNotResolveIsLookedUpOffTheEventLoopAndLoggedOnceWhileTried() throws Exception {
    AppConfig config = configOf("no-such-host.invalid:9092", 62);
    AtomicInteger wrapped = new AtomicInteger();
    AtomicBoolean topicsReady = new AtomicBoolean();
    Vertx vertx = Vertx.vertx();
    try (LogCapture log = LogCapture.start("org.apache.kafka", Level.INFO)) {
      OwnedShards owned = OwnedShards.none(config.database().shards());
      ShardOwnershipVerticle ownership = new ShardOwnershipVerticle(config, owned, statsOf(config),
          leaseHeld(62, config), topicsReady::get, (unused, kafka) -> {
            wrapped.incrementAndGet();
            return new QuietConsumer(kafka).consumer;
          });
      String deployment = vertx.deployVerticle(ownership).toCompletionStage().toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
      topicsReady.set(true); // the topic check got through (the host resolved then): it joins at its next look
      Await.until("three lookups of the broker host", SAFETY, () -> lookups(log).size() >= 3);

      assertThat(lookups(log)).as("the threads the bootstrap host was looked up on")
          .extracting(ILoggingEvent::getThreadName)
          .noneMatch(thread -> thread.startsWith("vert.x-eventloop-thread"));
      List<String> warnings = log.events().stream()
          .filter(event -> event.getLoggerName().equals(ShardOwnershipVerticle.class.getName()))
          .filter(event -> event.getLevel() == Level.WARN)
          .map(ILoggingEvent::getFormattedMessage)
          .filter(message -> message.contains("could not make the timer consumer"))
          .toList();
      assertThat(warnings).as("one line for every try in the minute").hasSize(1);
      assertThat(warnings.get(0)).contains("No resolvable bootstrap urls");
      assertThat(log.text()).as("a throw out of a timer, which Vert.x logs with its stack at every try")
          .doesNotContain("Unhandled exception");
      assertThat(wrapped).as("no consumer made, none wrapped").hasValue(0);
      assertThat(owned.list()).isEmpty();
      vertx.undeploy(deployment).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void aConsumerThatCouldNotBeMadeIsMadeAgainUntilTheNodeJoins() throws Exception {
    AppConfig config = configOf("127.0.0.1:9", 63);
    List<Boolean> madeOnTheEventLoop = new CopyOnWriteArrayList<>();
    List<QuietConsumer> consumers = new CopyOnWriteArrayList<>();
    Vertx vertx = Vertx.vertx();
    try (LogCapture log = LogCapture.start("org.apache.kafka", Level.INFO)) {
      OwnedShards owned = OwnedShards.none(config.database().shards());
      ShardOwnershipVerticle ownership = new ShardOwnershipVerticle(config, owned, statsOf(config),
          leaseHeld(63, config), () -> true, () -> {
            madeOnTheEventLoop.add(Context.isOnEventLoopThread());
            if (madeOnTheEventLoop.size() <= 2) {
              throw new ConfigException("No resolvable bootstrap urls given in bootstrap.servers");
            }
            return new OwnershipConsumer(KafkaClients.ownershipConsumer(config), config.kafka().timersTopic());
          }, (unused, kafka) -> {
            QuietConsumer consumer = new QuietConsumer(kafka);
            consumers.add(consumer);
            return consumer.consumer;
          });
      String deployment = vertx.deployVerticle(ownership).toCompletionStage().toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
      Await.until("a consumer made and subscribed", SAFETY, () -> consumers.size() == 1 && consumers.get(0).subscribed);

      assertThat(madeOnTheEventLoop).as("each try, on the event loop or not").containsExactly(false, false, false);
      assertThat(log.text()).contains("could not make the timer consumer").contains("tries that failed in a row: 1")
          .doesNotContain("in a row: 2").contains("made the timer consumer after 2 tries that failed");
      vertx.undeploy(deployment).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertThat(consumers.get(0).closed).as("the membership's consumer closed at the stop").isTrue();
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      consumers.forEach(consumer -> consumer.kafka.close(Duration.ZERO));
    }
  }

  @Test
  void aConsumerMadeAfterTheVerticleStoppedIsClosedUnused() throws Exception {
    AppConfig config = configOf("127.0.0.1:9", 64);
    AtomicBoolean topicsReady = new AtomicBoolean();
    CountDownLatch making = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicReference<OwnershipConsumer> made = new AtomicReference<>();
    AtomicInteger wrapped = new AtomicInteger();
    Vertx vertx = Vertx.vertx();
    try (LogCapture log = LogCapture.start("org.apache.kafka", Level.INFO)) {
      OwnedShards owned = OwnedShards.none(config.database().shards());
      ShardOwnershipVerticle ownership = new ShardOwnershipVerticle(config, owned, statsOf(config),
          leaseHeld(64, config), topicsReady::get, () -> {
            making.countDown();
            assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
            made.set(new OwnershipConsumer(KafkaClients.ownershipConsumer(config), config.kafka().timersTopic()));
            return made.get();
          }, (unused, kafka) -> {
            wrapped.incrementAndGet();
            return new QuietConsumer(kafka).consumer;
          });
      String deployment = vertx.deployVerticle(ownership).toCompletionStage().toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
      topicsReady.set(true); // the topic check got through: the verticle joins at its next look
      assertThat(making.await(30, TimeUnit.SECONDS)).as("a consumer being made").isTrue();
      vertx.undeploy(deployment).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      release.countDown(); // the lookup ends after the stop

      Await.until("the consumer made after the stop", SAFETY, () -> made.get() != null);
      // what the client logs as it closes; asking the consumer itself could race with the close, on its own thread
      String clientId = KafkaClients.ownershipConsumer(config).get(CommonClientConfigs.CLIENT_ID_CONFIG);
      Await.until("that consumer closed", SAFETY,
          () -> log.text().contains("App info kafka.consumer for " + clientId + " unregistered"));
      assertThat(wrapped).as("never wrapped to join the group").hasValue(0);
    } finally {
      release.countDown();
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      if (made.get() != null) {
        made.get().close(Duration.ZERO);
      }
    }
  }

  @Test
  void aJoinThatFailsOnceItsConsumerWasMadeClosesThatConsumerAndJoinsWithANewOne() throws Exception {
    AppConfig config = configOf("127.0.0.1:9", 66);
    List<OwnershipConsumer> made = new CopyOnWriteArrayList<>();
    List<QuietConsumer> joined = new CopyOnWriteArrayList<>();
    Vertx vertx = Vertx.vertx();
    try (LogCapture log = LogCapture.start("org.apache.kafka", Level.INFO)) {
      OwnedShards owned = OwnedShards.none(config.database().shards());
      ShardOwnershipVerticle ownership = new ShardOwnershipVerticle(config, owned, statsOf(config),
          leaseHeld(66, config), () -> true, () -> {
            made.add(new OwnershipConsumer(KafkaClients.ownershipConsumer(config), config.kafka().timersTopic()));
            return made.get(made.size() - 1);
          }, (unused, kafka) -> {
            if (made.size() == 1) {
              throw new IllegalStateException("no Vert.x consumer for the first one");
            }
            QuietConsumer consumer = new QuietConsumer(kafka);
            joined.add(consumer);
            return consumer.consumer;
          });
      String deployment = vertx.deployVerticle(ownership).toCompletionStage().toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
      Await.until("joined with a second consumer", SAFETY, () -> joined.size() == 1 && joined.get(0).subscribed);

      assertThat(log.text()).contains("joining the timer group failed; trying again")
          .contains("no Vert.x consumer for the first one");
      // the second one's wrapper closes nothing: a consumer of this client id closed is the first one
      String clientId = KafkaClients.ownershipConsumer(config).get(CommonClientConfigs.CLIENT_ID_CONFIG);
      Await.until("the first consumer closed", SAFETY,
          () -> log.text().contains("App info kafka.consumer for " + clientId + " unregistered"));
      assertThat(made).hasSize(2);
      vertx.undeploy(deployment).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      made.forEach(kafka -> kafka.close(Duration.ZERO));
    }
  }

  private static List<ILoggingEvent> lookups(LogCapture log) {
    return log.events().stream()
        .filter(event -> event.getFormattedMessage().startsWith("Couldn't resolve server no-such-host.invalid"))
        .toList();
  }

  private static AppConfig configOf(String bootstrapServers, int nodeId) {
    Map<String, String> settings = new ClusterSettings(bootstrapServers).forNode(nodeId);
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), settings::get));
  }

  private static NodeStats statsOf(AppConfig config) {
    return new NodeStats(new SimpleMeterRegistry(), config.database().shards(), Duration.ofSeconds(60));
  }

  /** A node that holds its lease and has reached the database all along: nothing but the broker keeps it out. */
  private static LeasedOrderIds leaseHeld(int nodeId, AppConfig config) {
    LeasedOrderIds ids = new LeasedOrderIds(nodeId, config.node().wallClock());
    ids.heldUntil(Long.MAX_VALUE, System.nanoTime() + TimeUnit.HOURS.toNanos(1));
    return ids;
  }

  /** A Vert.x consumer of the made Kafka consumer that records its subscribe and close and calls nothing back. */
  private static final class QuietConsumer {
    final OwnershipConsumer kafka;
    final KafkaConsumer<String, String> consumer;
    volatile boolean subscribed;
    volatile boolean closed;

    @SuppressWarnings("unchecked")
    QuietConsumer(OwnershipConsumer kafka) {
      this.kafka = kafka;
      this.consumer = (KafkaConsumer<String, String>) Proxy.newProxyInstance(getClass().getClassLoader(),
          new Class<?>[] {KafkaConsumer.class}, (proxy, method, args) -> switch (method.getName()) {
            case "handler", "exceptionHandler", "partitionsAssignedHandler", "partitionsRevokedHandler" -> proxy;
            case "subscribe" -> {
              subscribed = true;
              yield Future.succeededFuture();
            }
            case "close" -> {
              closed = true;
              yield Future.succeededFuture();
            }
            case "toString" -> "quiet consumer";
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            default -> throw new UnsupportedOperationException(method.getName());
          });
    }
  }
}
