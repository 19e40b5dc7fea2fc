package ordertimeout.cluster;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The Kafka consumer of the shard ownership group, which tells partitions lost from partitions revoked: the Vert.x
 * client reports both to its revocation handler. Lost partitions are those the group gave to other members before this
 * one heard: its membership had expired (no heartbeat for a session timeout: the broker out of reach, the process
 * paused) or was removed. Revoked ones it gives up in a rebalance before anyone else is given them.
 */
final class OwnershipConsumer extends KafkaConsumer<String, String> {
  private final String topic;
  /** Partitions of the topic reported lost and not yet asked about; written on the client's thread. */
  private final Set<Integer> lost = ConcurrentHashMap.newKeySet();

  OwnershipConsumer(Map<String, String> settings, String topic) {
    super(new HashMap<String, Object>(settings));
    this.topic = topic;
  }

  @Override
  public void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
    super.subscribe(topics, new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        listener.onPartitionsRevoked(partitions);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        listener.onPartitionsAssigned(partitions);
      }

      /** Recorded before the Vert.x listener hands them to the event loop, where {@link #tookLost} asks. */
      @Override
      public void onPartitionsLost(Collection<TopicPartition> partitions) {
        partitions.stream()
            .filter(partition -> partition.topic().equals(topic))
            .forEach(partition -> lost.add(partition.partition()));
        listener.onPartitionsLost(partitions);
      }
    });
  }

  /** Whether these partitions, reported to the revocation handler, were lost rather than revoked; forgets them. */
  boolean tookLost(int[] partitions) {
    boolean any = false;
    for (int partition : partitions) {
      any |= lost.remove(partition);
    }
    return any;
  }
}
