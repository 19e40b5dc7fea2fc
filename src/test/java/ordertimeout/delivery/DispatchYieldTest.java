package ordertimeout.delivery;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.metrics.NodeStats;
import ordertimeout.support.Await;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * While this node's close batches have waited over {@code events.dispatchWhileClosesWaitMillis} for a place (a deadline
 * storm), the dispatcher positions one batch of events that often, not one after another (decision 0052); once the
 * closes caught up it takes the rest at once. The close queue is the node's stats, set by hand.
 */
class DispatchYieldTest {
  private static final int BATCH = 100;
  private static final int EVENTS = 1000;

  private Vertx vertx;
  private NodeStats stats;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
    TestDatabase.reset();
  }

  @Test
  void whileClosesWaitOneBatchASecondThenTheRestAtOnce() {
    insertEvents(EVENTS);
    deployDispatcher(1000);
    Await.until("the first batch positioned", Duration.ofSeconds(10), () -> positioned() >= BATCH);

    Await.sleep(2_500);
    long whileClosesWaited = positioned();

    stats.closeQueued(0, 0);
    Await.until("every event positioned once the closes caught up", Duration.ofSeconds(10),
        () -> positioned() == EVENTS);
    // the first batch, then one a second: 3 by 2.5 s after it, 4 at a stretch; without the yield all 10 at once
    assertThat(whileClosesWaited).as("events positioned by 2.5 s after the first batch while close batches waited")
        .isLessThanOrEqualTo(4L * BATCH);
  }

  @Test
  void withoutTheYieldTheBatchesFollowOneAnotherWhateverTheCloses() {
    insertEvents(EVENTS);
    deployDispatcher(0);

    Await.until("every event positioned while close batches wait", Duration.ofSeconds(10),
        () -> positioned() == EVENTS);
  }

  private void deployDispatcher(int whileClosesWaitMillis) {
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), Map.of(
        "OT_EVENTS_BATCH_SIZE", Integer.toString(BATCH),
        "OT_EVENTS_DISPATCH_WHILE_CLOSES_WAIT_MILLIS", Integer.toString(whileClosesWaitMillis))::get));
    stats = new NodeStats(new SimpleMeterRegistry(), config.database().shards(), Duration.ofSeconds(60));
    // closes wait from before the dispatcher's first batch on
    stats.closeQueued(3, System.currentTimeMillis() - 5_000);
    TestService.await(vertx.deployVerticle(new EventDispatchVerticle(config, TestDatabase.connectOptions(), stats)));
  }

  private static long positioned() {
    return Sql.count("SELECT count(*) FROM outbox_feed");
  }

  private static void insertEvents(int count) {
    Sql.execute("""
        INSERT INTO outbox (order_id, client, type, payload)
        SELECT n, 'client-a', 'ORDER_CREATED', '{}' FROM generate_series(1, ?) AS n""", count);
  }
}
