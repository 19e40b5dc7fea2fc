package ordertimeout.kafka;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.kafka.admin.KafkaAdminClient;
import io.vertx.kafka.admin.NewTopic;
import io.vertx.kafka.admin.TopicDescription;
import io.vertx.kafka.client.producer.KafkaProducer;
import ordertimeout.cluster.ShardOwnershipVerticle;
import ordertimeout.config.AppConfig;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;

/** Client settings shared by the node's Kafka producers and consumer, and the topics they need. */
public final class KafkaClients {
  private static final int TOPIC_READY_TRIES = 100;
  private static final long TOPIC_READY_PAUSE_MILLIS = 100;
  /** How long one call of the topic check waits for a broker that does not answer (the client's default: a minute). */
  static final int TOPIC_CHECK_CALL_TIMEOUT_MILLIS = 5_000;

  private KafkaClients() {}

  /**
   * An idempotent producer that waits for every in-sync replica: a send that reports success is
   * durable and written once, and a send that fails does so within {@code kafka.deliveryTimeoutMillis}.
   */
  public static Map<String, String> producer(AppConfig config, String purpose) {
    AppConfig.Kafka kafka = config.kafka();
    Map<String, String> settings = common(config, purpose);
    settings.put(ProducerConfig.ACKS_CONFIG, "all");
    settings.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    settings.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    settings.put(ProducerConfig.LINGER_MS_CONFIG, "2");
    settings.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Integer.toString(kafka.deliveryTimeoutMillis()));
    settings.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(Math.min(10_000, kafka.deliveryTimeoutMillis() - 10)));
    settings.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Integer.toString(kafka.deliveryTimeoutMillis()));
    settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    settings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    return settings;
  }

  /**
   * Makes a producer of {@code settings} off the event loop: making one resolves the bootstrap hosts, a blocking
   * lookup that throws when none resolves (then the future fails, and the caller may try again later), and may wait
   * for a DNS that does not answer. Made through {@code clients}, so that one that comes after its verticle's stop
   * is closed.
   */
  public static Future<KafkaProducer<String, String>> producerOf(Vertx vertx, Map<String, String> settings,
      OpenClients clients) {
    return vertx.<Producer<String, String>>executeBlocking(() -> clients.make(
            () -> new org.apache.kafka.clients.producer.KafkaProducer<>(new HashMap<String, Object>(settings)),
            made -> made.close(Duration.ZERO)), false)
        .map(made -> KafkaProducer.create(vertx, made));
  }

  /**
   * A member of the group that decides shard ownership: the classic protocol with cooperative-sticky
   * assignment (a rebalance moves only the partitions that must move). Offsets are committed every
   * second and when a partition is revoked, so that its next owner goes on from there (see
   * {@link ShardOwnershipVerticle}); a group that never committed starts at the end, since every node
   * loads its shards from the database anyway.
   */
  public static Map<String, String> ownershipConsumer(AppConfig config) {
    AppConfig.Kafka kafka = config.kafka();
    Map<String, String> settings = common(config, "shards");
    settings.put(ConsumerConfig.GROUP_ID_CONFIG, kafka.groupId());
    settings.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
    settings.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
    settings.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Integer.toString(kafka.sessionTimeoutMillis()));
    // Survivors learn of a rebalance at their next heartbeat: frequent ones take a dead node's shards sooner.
    settings.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, Integer.toString(heartbeatIntervalMillis(kafka)));
    // A stuck event loop stops the polls while the heartbeat thread keeps the session: leave the group soon.
    settings.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "30000");
    settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
    settings.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "1000");
    settings.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
    settings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    settings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    return settings;
  }

  private static int heartbeatIntervalMillis(AppConfig.Kafka kafka) {
    return Math.max(100, kafka.sessionTimeoutMillis() / 10);
  }

  private static Map<String, String> common(AppConfig config, String purpose) {
    Map<String, String> settings = new HashMap<>();
    settings.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, config.kafka().bootstrapServers());
    settings.put(CommonClientConfigs.CLIENT_ID_CONFIG, "order-timeout-" + config.node().id() + "-" + purpose);
    return settings;
  }

  /**
   * Creates the timer topic (one partition per shard) and the events topic when missing, and refuses
   * to go on with a timer topic whose partition count is not the shard count: ownership would not
   * cover every shard. A broker that does not answer fails a call after
   * {@value #TOPIC_CHECK_CALL_TIMEOUT_MILLIS} ms (see {@link #brokerAbsent}).
   */
  public static Future<Void> ensureTopics(Vertx vertx, AppConfig config) {
    return ensureTopics(vertx, config, new OpenClients());
  }

  /** As {@link #ensureTopics(Vertx, AppConfig)}, with an admin client made and closed through {@code clients}. */
  public static Future<Void> ensureTopics(Vertx vertx, AppConfig config, OpenClients clients) {
    Map<String, Object> settings = new HashMap<>(common(config, "admin"));
    settings.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, TOPIC_CHECK_CALL_TIMEOUT_MILLIS);
    settings.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, TOPIC_CHECK_CALL_TIMEOUT_MILLIS);
    // With its only bootstrap node refusing connections, kafka-clients 4.x's default (rebootstrap) makes the client
    // rebootstrap at every retry, adding a metadata call each time: thousands of log lines in a check's 5 s. This
    // client lives for one check, and the next check makes a new one.
    settings.put(AdminClientConfig.METADATA_RECOVERY_STRATEGY_CONFIG, "none");
    // Making the client resolves the bootstrap hosts, a blocking lookup that throws when none resolves.
    return vertx.executeBlocking(() -> clients.make(() -> AdminClient.create(settings),
            admin -> admin.close(Duration.ZERO)), false)
        .recover(failure -> {
          ConfigException unresolved = unresolved(failure);
          return Future.failedFuture(unresolved == null ? failure
              : new BootstrapUnresolved(config.kafka().bootstrapServers(), unresolved));
        })
        // the calls are over (or failed) once the check is: nothing is left to wait for
        .compose(admin -> Future.<Void>succeededFuture() // a throw below still closes the client
            .compose(go -> ensureTopics(vertx, config, KafkaAdminClient.create(vertx, admin)))
            .eventually(() -> vertx.executeBlocking(() -> {
              clients.closeNow(admin);
              return null;
            }, false)));
  }

  private static Future<Void> ensureTopics(Vertx vertx, AppConfig config, KafkaAdminClient admin) {
    AppConfig.Kafka kafka = config.kafka();
    int shards = config.database().shards();
    short replication = (short) kafka.replicationFactor();
    return admin.listTopics()
        .compose(existing -> {
          // A timer message matters for seconds to hours: older ones would only be replayed for nothing.
          // acks=all is durable only with a second in-sync replica to wait for.
          String minInSync = Integer.toString(Math.min(2, kafka.replicationFactor()));
          NewTopic timers = new NewTopic(kafka.timersTopic(), shards, replication)
              .setConfig(Map.of("retention.ms", "86400000", "min.insync.replicas", minInSync));
          NewTopic events = new NewTopic(kafka.eventsTopic(), shards, replication).setConfig(Map.of("min.insync.replicas", minInSync));
          List<NewTopic> missing = List.of(timers, events).stream()
              .filter(topic -> !existing.contains(topic.getName()))
              .toList();
          return missing.isEmpty() ? Future.<Void>succeededFuture() : admin.createTopics(missing)
              .recover(failure -> failure instanceof TopicExistsException || failure.getCause() instanceof TopicExistsException
                  ? Future.succeededFuture() // another node created it first
                  : Future.failedFuture(failure));
        })
        .compose(created -> describeOnceKnown(vertx, admin, kafka.timersTopic(), TOPIC_READY_TRIES))
        .compose(timers -> {
          int partitions = timers.getPartitions().size();
          return partitions == shards ? Future.<Void>succeededFuture() : Future.<Void>failedFuture(new IllegalStateException(
              "topic " + kafka.timersTopic() + " has " + partitions + " partitions but the database has " + shards
                  + " shards; give the topic one partition per shard or configure kafka.timersTopic"));
        });
  }

  /**
   * Whether a failed {@link #ensureTopics} says only that no broker answered (yet): a timeout, a connection refused or
   * lost, a topic not yet known everywhere (Kafka's retriable errors), a client that could not be made because no
   * bootstrap host resolved (a name not in the DNS yet, or a DNS that does not answer). Anything else is a broker
   * that answered and is wrong for this service (a timer topic of another partition count, a replication factor it
   * cannot give, no right to create topics) or a malformed {@code kafka.bootstrapServers}.
   */
  public static boolean brokerAbsent(Throwable failure) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      if (cause instanceof RetriableException || cause instanceof TimeoutException
          || cause instanceof BootstrapUnresolved) {
        return true;
      }
    }
    return false;
  }

  /**
   * A topic just created, by this node or another, is not known to the broker at once: until its metadata has
   * spread, describing it fails with UnknownTopicOrPartitionException.
   */
  private static Future<TopicDescription> describeOnceKnown(Vertx vertx, KafkaAdminClient admin, String topic, int triesLeft) {
    return admin.describeTopics(List.of(topic))
        .map(described -> described.get(topic))
        .recover(failure -> {
          boolean unknownYet = failure instanceof UnknownTopicOrPartitionException
              || failure.getCause() instanceof UnknownTopicOrPartitionException;
          return unknownYet && triesLeft > 1
              ? vertx.timer(TOPIC_READY_PAUSE_MILLIS).compose(waited -> describeOnceKnown(vertx, admin, topic, triesLeft - 1))
              : Future.failedFuture(failure);
        });
  }

  /** Why a client's creation failed if none of its bootstrap hosts resolved (not one malformed); else null. */
  private static ConfigException unresolved(Throwable failure) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      if (cause instanceof ConfigException config && String.valueOf(config.getMessage()).contains("No resolvable")) {
        return config;
      }
    }
    return null;
  }

  /** No admin client could be made: with kafka-clients 4.1, none of the bootstrap hosts resolved. */
  static final class BootstrapUnresolved extends RuntimeException {
    BootstrapUnresolved(String bootstrapServers, ConfigException cause) {
      super("no Kafka client for " + bootstrapServers + ": " + cause.getMessage(), cause);
    }
  }
}
