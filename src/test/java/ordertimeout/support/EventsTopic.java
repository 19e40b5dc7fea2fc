package ordertimeout.support;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Reads a whole topic from the beginning, as a downstream consumer would. */
public final class EventsTopic {
  private EventsTopic() {}

  /** One event as published: the key is the order id. */
  public record Event(String orderId, long eventId, String type, String payload, int partition, long offset) {}

  public static List<Event> readAll(String bootstrapServers, String topic) {
    return records(bootstrapServers, topic).stream()
        .map(record -> new Event(record.key(), Long.parseLong(header(record, "event-id")), header(record, "event-type"),
            record.value(), record.partition(), record.offset()))
        .toList();
  }

  /** Every record of {@code topic}, each partition's in order. */
  public static List<ConsumerRecord<String, String>> records(String bootstrapServers, String topic) {
    Map<String, Object> settings = Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(settings)) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(20)).stream()
          .map(info -> new TopicPartition(topic, info.partition()))
          .toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, Duration.ofSeconds(20));
      List<ConsumerRecord<String, String>> records = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (partitions.stream().anyMatch(partition -> consumer.position(partition) < ends.get(partition))) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("could not read " + topic + " to its end within 60 s");
        }
        consumer.poll(Duration.ofMillis(500)).forEach(records::add);
      }
      return records;
    }
  }

  private static String header(ConsumerRecord<String, String> record, String name) {
    Header header = record.headers().lastHeader(name);
    if (header == null) {
      throw new IllegalStateException("record at " + record.partition() + "/" + record.offset() + " has no header " + name);
    }
    return new String(header.value(), StandardCharsets.UTF_8);
  }
}
