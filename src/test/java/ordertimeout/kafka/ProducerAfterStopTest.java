package ordertimeout.kafka;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.kafka.client.producer.KafkaProducer;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A producer still being made when its verticle stops (making one resolves the bootstrap hosts, which may wait for a
 * DNS that does not answer) is closed once made: its stop may have given up waiting, and Vert.x may be closed by then.
 */
class ProducerAfterStopTest {
  /** Holds the making of a producer, as a slow lookup would. */
  public static final class HeldSerializer extends StringSerializer {
    static final CountDownLatch MAKING = new CountDownLatch(1);
    static final CountDownLatch RELEASE = new CountDownLatch(1);

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
      MAKING.countDown();
      try {
        assertThat(RELEASE.await(60, TimeUnit.SECONDS)).isTrue();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      super.configure(configs, isKey);
    }
  }

  private static List<Thread> producerThreads(String clientId) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(thread -> thread.isAlive() && thread.getName().contains("kafka-producer-network-thread")
            && thread.getName().endsWith(clientId))
        .toList();
  }

  @Test
  void aProducerMadeAfterItsVerticleStoppedIsClosed() throws Exception {
    int nodeId = 96;
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"),
        new ClusterSettings("127.0.0.1:9").forNode(nodeId)::get));
    Map<String, String> settings = KafkaClients.producer(config, "held");
    settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, HeldSerializer.class.getName());
    Vertx vertx = Vertx.vertx();
    try {
      OpenClients producers = new OpenClients();
      Future<KafkaProducer<String, String>> made = KafkaClients.producerOf(vertx, settings, producers);
      assertThat(HeldSerializer.MAKING.await(30, TimeUnit.SECONDS)).as("the producer being made").isTrue();
      producers.closeAll(); // what the verticle's stop does
      HeldSerializer.RELEASE.countDown();

      assertThatThrownBy(() -> made.await(30, TimeUnit.SECONDS)).isInstanceOf(OpenClients.Closed.class);
      String clientId = "order-timeout-" + nodeId + "-held";
      Await.until("no producer thread left", Duration.ofSeconds(20), () -> producerThreads(clientId).isEmpty());
    } finally {
      vertx.close().await(30, TimeUnit.SECONDS);
    }
  }
}
