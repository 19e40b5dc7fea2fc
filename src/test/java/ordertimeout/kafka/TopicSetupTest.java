package ordertimeout.kafka;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.KafkaBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

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

  @Test
  void twoNodesStartingTogetherBothFindTheNewTopicsReady() throws Exception {
    for (int round = 0; round < 10; round++) {
      ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
      Future<Void> first = KafkaClients.ensureTopics(vertx, node(cluster, 1, Map.of()));
      Future<Void> second = KafkaClients.ensureTopics(vertx, node(cluster, 2, Map.of()));
      Future.all(first, second).toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
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
}
