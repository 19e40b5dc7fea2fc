package ordertimeout.kafka;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.KafkaBroker;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Nodes that start together on fresh topics: whoever creates them, every node finds them ready. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TopicSetupTest {
  private final Vertx vertx = Vertx.vertx();

  @AfterAll
  void close() {
    vertx.close();
  }

  private static AppConfig node(ClusterSettings cluster, int nodeId, Map<String, String> more) {
    Map<String, String> environment = new HashMap<>(cluster.forNode(nodeId));
    environment.putAll(more);
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
  }

  /**
   * Ten times, two nodes race to create the same fresh topics: both succeed, and then (as each node goes on to use
   * them at once) both topics are there with a partition per shard, each with its leader, and the settings asked for.
   */
  @Test
  void twoNodesStartingTogetherBothFindTheNewTopicsReady() throws Exception {
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaBroker.shared().bootstrapServers()))) {
      for (int round = 0; round < 10; round++) {
        ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
        AppConfig firstNode = node(cluster, 1, Map.of());
        Future<Void> first = KafkaClients.ensureTopics(vertx, firstNode);
        Future<Void> second = KafkaClients.ensureTopics(vertx, node(cluster, 2, Map.of()));
        Future.all(first, second).toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);

        String timers = cluster.timersTopic();
        String events = cluster.eventsTopic();
        Map<String, TopicDescription> topics = admin.describeTopics(List.of(timers, events)).allTopicNames().get(30, TimeUnit.SECONDS);
        for (String topic : List.of(timers, events)) {
          assertThat(topics.get(topic).partitions()).as("%s: a partition per shard", topic).hasSize(firstNode.database().shards())
              .allSatisfy(partition -> {
                assertThat(partition.leader()).as("%s-%d has a leader", topic, partition.partition()).isNotNull();
                assertThat(partition.replicas()).as("replicas of %s-%d (replication factor 1 on one broker)", topic, partition.partition())
                    .hasSize(1);
              });
        }
        ConfigResource timersConfig = new ConfigResource(ConfigResource.Type.TOPIC, timers);
        ConfigResource eventsConfig = new ConfigResource(ConfigResource.Type.TOPIC, events);
        Map<ConfigResource, Config> configs = admin.describeConfigs(List.of(timersConfig, eventsConfig)).all().get(30, TimeUnit.SECONDS);
        assertThat(configs.get(timersConfig).get("retention.ms").value()).as("timer messages kept a day").isEqualTo("86400000");
        assertThat(configs.get(timersConfig).get("min.insync.replicas").value()).as("min.insync.replicas of %s", timers).isEqualTo("1");
        assertThat(configs.get(eventsConfig).get("min.insync.replicas").value()).as("min.insync.replicas of %s", events).isEqualTo("1");
        assertThat(configs.get(eventsConfig).get("retention.ms").isDefault()).as("events kept as long as the broker keeps them").isTrue();
      }
    }
  }

  @Test
  void aTimersTopicWithAnotherPartitionCountIsRefused() throws Exception {
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    KafkaClients.ensureTopics(vertx, node(cluster, 1, Map.of())).toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    AppConfig moreShards = node(cluster, 2, Map.of("OT_DATABASE_SHARDS", "128"));
    assertThatThrownBy(() -> KafkaClients.ensureTopics(vertx, moreShards).toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS))
        .hasRootCauseInstanceOf(IllegalStateException.class)
        .rootCause().hasMessageContaining("has 64 partitions but the database has 128 shards");
  }

  /**
   * At start (decision 0051): a broker that answers with a timer topic of another partition count still stops the
   * start; one that does not answer does not, and the node is left checking again, not ready for Kafka.
   */
  @Test
  void theStartStopsOnWrongTopicsButNotOnAnAbsentBroker() throws Exception {
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    KafkaClients.ensureTopics(vertx, node(cluster, 1, Map.of())).toCompletionStage().toCompletableFuture()
        .get(60, TimeUnit.SECONDS);
    BrokerTopics wrong = new BrokerTopics();
    AppConfig moreShards = node(cluster, 2, Map.of("OT_DATABASE_SHARDS", "128"));
    assertThatThrownBy(() -> vertx.deployVerticle(new TopicCheckVerticle(moreShards, wrong))
        .toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS))
        .hasRootCauseInstanceOf(IllegalStateException.class);
    assertThat(wrong.ready()).isFalse();
    assertThat(wrong.startedWithoutTheBroker()).isFalse();

    BrokerTopics absent = new BrokerTopics();
    AppConfig noBroker = node(new ClusterSettings("127.0.0.1:9"), 3, Map.of());
    long started = System.nanoTime();
    String deployment = vertx.deployVerticle(new TopicCheckVerticle(noBroker, absent))
        .toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    long tookMillis = (System.nanoTime() - started) / 1_000_000;
    assertThat(tookMillis).as("the check at start waits its bound, not a minute").isLessThan(15_000);
    assertThat(absent.state()).isEqualTo(BrokerTopics.State.UNREACHABLE);
    assertThat(absent.startedWithoutTheBroker()).isTrue();
    assertThat(absent.lastFailure()).contains("TimeoutException");
    vertx.undeploy(deployment).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  /**
   * A bootstrap host that does not resolve makes kafka-clients 4.1 throw when the client is made: the node still
   * starts without the broker, and the check goes on being tried (made off the event loop, the throw a failed check).
   */
  @Test
  void aBootstrapHostThatDoesNotResolveDoesNotStopTheChecks() throws Exception {
    BrokerTopics topics = new BrokerTopics();
    AppConfig unresolved = node(new ClusterSettings("no-such-host.invalid:9092"), 4, Map.of());
    String deployment = vertx.deployVerticle(new TopicCheckVerticle(unresolved, topics))
        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    try {
      assertThat(topics.state()).isEqualTo(BrokerTopics.State.UNREACHABLE);
      assertThat(topics.startedWithoutTheBroker()).isTrue();
      assertThat(topics.lastFailure()).contains("No resolvable bootstrap");
      Await.until("three more checks", Duration.ofMillis(TopicCheckVerticle.RETRY_MILLIS * 3 + 5_000),
          () -> topics.failedChecks() >= 4);
      assertThat(topics.state()).isEqualTo(BrokerTopics.State.UNREACHABLE);
      assertThat(topics.lastFailure()).contains("No resolvable bootstrap");
    } finally {
      vertx.undeploy(deployment).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }
}
