package ordertimeout.kafka;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.LogCapture;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The topic check's admin client while no broker answers (a closed port): it neither spins nor outlives the verticle
 * that made it.
 */
class TopicCheckClientsTest {
  private static final String CLOSED_PORT = "127.0.0.1:9";
  /** The old client logged thousands of lines in a check's 5 s (rebootstrapping without a pause). */
  private static final int MAX_ADMIN_LOG_EVENTS_PER_CHECK = 300;

  private static AppConfig node(int nodeId) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"),
        new ClusterSettings(CLOSED_PORT).forNode(nodeId)::get));
  }

  private static String adminThreadOf(int nodeId) {
    return "order-timeout-" + nodeId + "-admin";
  }

  private static List<Thread> adminThreads(int nodeId) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(thread -> thread.isAlive() && thread.getName().contains("kafka-admin-client-thread")
            && thread.getName().endsWith(adminThreadOf(nodeId)))
        .toList();
  }

  @Test
  void aCheckAgainstAClosedPortFailsAsAbsentWithoutSpinning() throws Exception {
    int nodeId = 93;
    Vertx vertx = Vertx.vertx();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    try (LogCapture log = LogCapture.start("org.apache.kafka", Level.INFO)) {
      long started = System.nanoTime();
      CompletableFuture<Void> check =
          KafkaClients.ensureTopics(vertx, node(nodeId)).toCompletionStage().toCompletableFuture();
      long adminCpuNanos = 0;
      while (!check.isDone()) {
        for (Thread thread : adminThreads(nodeId)) {
          adminCpuNanos = Math.max(adminCpuNanos, threads.getThreadCpuTime(thread.getId()));
        }
        Await.sleep(50);
      }
      long tookMillis = (System.nanoTime() - started) / 1_000_000;
      assertThatThrownBy(() -> check.get(1, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
          .satisfies(failure -> assertThat(KafkaClients.brokerAbsent(failure.getCause()))
              .as("a broker that does not answer: %s", failure.getCause()).isTrue());
      long adminEvents = log.events().stream().filter(event -> onAdminThread(event, nodeId)).count();
      System.out.printf("TopicCheckClientsTest: a check against a closed port failed after %d ms; its admin client "
          + "logged %d events and its thread used %d ms of CPU%n", tookMillis, adminEvents, adminCpuNanos / 1_000_000);
      assertThat(adminEvents).as("log events of the admin client in one check").isLessThan(
          MAX_ADMIN_LOG_EVENTS_PER_CHECK);
    } finally {
      vertx.close().await(30, TimeUnit.SECONDS);
    }
  }

  private static boolean onAdminThread(ILoggingEvent event, int nodeId) {
    return event.getThreadName() != null && event.getThreadName().endsWith(adminThreadOf(nodeId));
  }

  /**
   * The service stops by closing Vert.x, which stops the verticles first: the admin client of a check under way then
   * is closed at once, and none is left talking to the absent broker.
   */
  @Test
  void closingVertxWhileACheckIsUnderWayLeavesNoAdminClient() throws Exception {
    int nodeId = 94;
    Vertx vertx = Vertx.vertx();
    BrokerTopics topics = new BrokerTopics();
    vertx.deployVerticle(new TopicCheckVerticle(node(nodeId), topics)).await(30, TimeUnit.SECONDS);
    assertThat(topics.state()).isEqualTo(BrokerTopics.State.UNREACHABLE);
    Await.until("the admin client of the start's check closed", Duration.ofSeconds(20),
        () -> adminThreads(nodeId).isEmpty());
    Await.until("a check under way after the start", Duration.ofSeconds(TopicCheckVerticle.RETRY_MILLIS / 1000 + 10),
        () -> !adminThreads(nodeId).isEmpty());
    vertx.close().await(30, TimeUnit.SECONDS);
    try {
      Await.until("no admin client thread left after Vert.x closed", Duration.ofSeconds(20),
          () -> adminThreads(nodeId).isEmpty());
    } finally {
      adminThreads(nodeId).forEach(thread -> System.out.printf("TopicCheckClientsTest: still alive: %s at %s%n",
          thread.getName(), Arrays.stream(thread.getStackTrace()).limit(3).toList()));
    }
  }
}
