package ordertimeout.cluster;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.LocalCodec;
import ordertimeout.bus.Revocation;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderIds;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.LogCapture;
import ordertimeout.timer.OwnedShards;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the timer fan-out says as it hands timers over. At the group's first assignment the timer hands over, as lost,
 * the timers it kept before for the shards other nodes own: those shards were never this node's, and a line calling
 * them lost shards would send an operator looking for a loss on a normal start. A real loss is still called one. No
 * broker: the sends fail, which the lines say too; the fan-out is driven through its event-bus addresses.
 */
class HandOverLogTest {
  private static final Duration SAFETY = Duration.ofSeconds(30);

  @Test
  void theFirstAssignmentsHandOverNamesNoShardLost() throws Exception {
    AppConfig config = configOf();
    int shards = config.database().shards();
    OwnedShards owned = OwnedShards.none(shards);
    int[] others = IntStream.range(shards / 2, shards).toArray();
    Deadlines kept = deadlinesOn(others, shards);
    Vertx vertx = Vertx.vertx();
    try (LogCapture log = LogCapture.start("ordertimeout", Level.INFO)) {
      deploy(vertx, config, owned);
      AtomicInteger toTheWheel = countSends(vertx, Addresses.TIMER_KEPT_SCHEDULE);
      // before the first assignment: the timers stay in this node's wheel (and are remembered), whatever their shard
      vertx.eventBus().send(Addresses.TIMER_SCHEDULE, kept);
      Await.until("the timers kept in this node's wheel", SAFETY, () -> toTheWheel.get() == 1);
      owned.add(IntStream.range(0, shards / 2).toArray());
      vertx.eventBus().send(Addresses.SHARDS_HANDED_OVER, new Revocation(others, true, kept));

      Await.until("the fan-out told how the hand-over went", SAFETY, () -> !handOverLines(log).isEmpty());
      List<String> lines = handOverLines(log);
      assertThat(String.join("\n", lines)).as("what the fan-out said")
          .doesNotContain("lost")
          .doesNotContain("[" + others[0] + ", " + others[1])
          .contains("timers kept here before the group's first assignment for the " + others.length + " shards");
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void aShardOwnedAndLostIsCalledLost() throws Exception {
    AppConfig config = configOf();
    int shards = config.database().shards();
    OwnedShards owned = OwnedShards.none(shards);
    int[] lost = IntStream.range(shards / 2, shards).toArray();
    Vertx vertx = Vertx.vertx();
    try (LogCapture log = LogCapture.start("ordertimeout", Level.INFO)) {
      deploy(vertx, config, owned);
      AtomicInteger toTheWheel = countSends(vertx, Addresses.TIMER_OWNED_SCHEDULE);
      owned.add(IntStream.range(0, shards).toArray());
      vertx.eventBus().send(Addresses.TIMER_SCHEDULE, deadlinesOn(lost, shards));
      Await.until("the timers of owned shards in this node's wheel", SAFETY, () -> toTheWheel.get() == 1);
      owned.remove(lost);
      vertx.eventBus().send(Addresses.SHARDS_HANDED_OVER, new Revocation(lost, false, Deadlines.EMPTY));

      Await.until("the fan-out told how the hand-over went", SAFETY, () -> !handOverLines(log).isEmpty());
      assertThat(handOverLines(log)).singleElement().asString()
          .startsWith("sent 3 timers of the lost shards [" + lost[0] + ", " + lost[1]);
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  private static void deploy(Vertx vertx, AppConfig config, OwnedShards owned) throws Exception {
    LocalCodec.registerAll(vertx);
    NodeStats stats = new NodeStats(new SimpleMeterRegistry(), config.database().shards(), Duration.ofSeconds(60));
    vertx.deployVerticle(new TimerFanoutVerticle(config, stats, owned)).toCompletionStage().toCompletableFuture()
        .get(30, TimeUnit.SECONDS);
  }

  /** Stands in for the wheel: counts what the fan-out sends it. */
  private static AtomicInteger countSends(Vertx vertx, String address) throws Exception {
    AtomicInteger sends = new AtomicInteger();
    vertx.eventBus().consumer(address, message -> sends.incrementAndGet()).completion().toCompletionStage()
        .toCompletableFuture().get(30, TimeUnit.SECONDS);
    return sends;
  }

  /** The fan-out's INFO lines about timers sent (not its warning that a send failed). */
  private static List<String> handOverLines(LogCapture log) {
    return log.events().stream()
        .filter(event -> event.getLoggerName().equals(TimerFanoutVerticle.class.getName()))
        .filter(event -> event.getLevel() == Level.INFO)
        .map(ILoggingEvent::getFormattedMessage)
        .filter(message -> message.startsWith("sent "))
        .toList();
  }

  /** One timer on each of the first three of these shards. */
  private static Deadlines deadlinesOn(int[] onShards, int shards) {
    long[] ids = new long[3];
    long id = OrderIds.firstIdAt(System.currentTimeMillis());
    for (int found = 0; found < ids.length; id++) {
      if (OrderIds.shardOf(id, shards) == onShards[found]) {
        ids[found++] = id;
      }
    }
    long closeAt = System.currentTimeMillis() + 600_000;
    return new Deadlines(ids, new long[] {closeAt, closeAt, closeAt},
        new long[] {Deadlines.NONE, Deadlines.NONE, Deadlines.NONE});
  }

  private static AppConfig configOf() {
    Map<String, String> settings = new ClusterSettings("127.0.0.1:9").forNode(65);
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), settings::get));
  }
}
