package ordertimeout.delivery;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.kafka.client.producer.KafkaProducer;
import io.vertx.kafka.client.producer.KafkaProducerRecord;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.config.AppConfig;
import ordertimeout.kafka.BrokerTopics;
import ordertimeout.kafka.KafkaClients;
import ordertimeout.kafka.OpenClients;
import ordertimeout.metrics.NodeStats;
import ordertimeout.store.OutboxStore.OutboxEvent;
import ordertimeout.store.OutboxStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Publishes the outbox to the events topic: the order id as the key, the event id and type in the
 * headers {@value #EVENT_ID_HEADER} and {@value #EVENT_TYPE_HEADER}, the stored JSON as the value.
 * Rows are marked published in the transaction that locked them, after the broker acknowledged every
 * one; if it did not, the transaction rolls back and they go out on a later try. Consumers may see an
 * event twice (acknowledged, then the commit failed) and must de-duplicate by event id. Events go in feed order, once
 * {@link EventDispatchVerticle} has given them their position (commit order).
 */
public final class OutboxRelayVerticle extends VerticleBase {
  public static final String EVENT_ID_HEADER = "event-id";
  public static final String EVENT_TYPE_HEADER = "event-type";
  private static final Logger log = LoggerFactory.getLogger(OutboxRelayVerticle.class);
  private static final long MAX_BACKOFF_MILLIS = 5_000;

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final BrokerTopics topics;
  private OutboxStore store;
  /** Made once the node's topic check got through; null until then. */
  private Future<KafkaProducer<String, String>> producer;
  private final OpenClients producers = new OpenClients();
  private long timer = -1;
  private long backoffMillis;
  private boolean stopped;
  /** The try under way, if any. */
  private Future<Integer> current = Future.succeededFuture(0);

  public OutboxRelayVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, BrokerTopics topics) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.topics = topics;
  }

  @Override
  public Future<?> start() {
    store = OutboxStore.shared(vertx, connectOptions, config.database().background());
    relayLater(0);
    return Future.succeededFuture();
  }

  /**
   * Lets the try under way end first: stopped under it, its pool would close before the commit, and
   * another node would publish again the events the broker had already acknowledged.
   */
  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(timer);
    long limitMillis = tryWithinMillis();
    Future<KafkaProducer<String, String>> made = producer == null ? Future.succeededFuture() : producer;
    return current.transform(ended -> made.transform(was -> was.succeeded() && was.result() != null
            ? was.result().close().onSuccess(closed -> producers.forget(was.result().unwrap()))
            : Future.succeededFuture()))
        .timeout(limitMillis, TimeUnit.MILLISECONDS)
        .recover(failure -> {
          log.warn("the outbox relay had not stopped after {} ms ({}); a try still running rolls back when the pool closes",
              limitMillis, failure.toString());
          return Future.succeededFuture();
        })
        .eventually(this::closeProducersLeft);
  }

  /**
   * Closes without waiting a producer not closed above (its close timed out) or made after the stop (it was being made
   * as the stop timed out): Vert.x may close before its future completes, and nothing would close it then.
   */
  private Future<Void> closeProducersLeft() {
    return producers.closeAll(vertx);
  }

  /**
   * How long one try may wait for the broker: a send may wait {@code kafka.deliveryTimeoutMillis} for the topic's
   * metadata (the producer's max.block.ms) and as long again to be delivered.
   */
  private long tryWithinMillis() {
    return 2L * config.kafka().deliveryTimeoutMillis();
  }

  private void relayLater(long delayMillis) {
    if (!stopped) {
      timer = vertx.setTimer(Math.max(1, delayMillis), id -> relay());
    }
  }

  /**
   * A full batch is followed at once by the next; otherwise the relay waits {@code kafka.relayIntervalMillis}.
   *
   * <p>The topic's partitions are asked for first, outside the transaction: while no broker answers, the
   * producer drops the topic from its metadata, and then every send waits up to
   * {@code kafka.deliveryTimeoutMillis} for it, one after another on the producer's worker. Without the
   * check each try would queue a whole batch of such sends and hold its rows locked meanwhile. Nothing is asked
   * before the node's topic check got through ({@link BrokerTopics}): the events wait in the outbox.
   */
  private void relay() {
    if (!topics.ready()) {
      relayLater(config.kafka().relayIntervalMillis());
      return;
    }
    int batchSize = config.kafka().relayBatchSize();
    if (producer == null || producer.failed()) {
      producer = KafkaClients.producerOf(vertx, KafkaClients.producer(config, "outbox"), producers).onSuccess(made ->
          // each failed send also fails its future, which relay() handles; without a handler Vert.x logs each one
          made.exceptionHandler(failure -> log.debug("outbox send failed: {}", failure.toString())));
    }
    current = producer.compose(made -> made.partitionsFor(config.kafka().eventsTopic())
        .compose(partitions -> store.publishOldest(batchSize, tryWithinMillis(), events -> publish(made, events))));
    current
        .onSuccess(published -> {
          if (backoffMillis > 0) {
            log.info("outbox relay publishes again");
            backoffMillis = 0;
          }
          stats.outboxPublished(published);
          relayLater(published == batchSize ? 0 : config.kafka().relayIntervalMillis());
        })
        .onFailure(failure -> {
          stats.outboxRelayFailed();
          if (backoffMillis == 0) {
            log.warn("outbox relay could not publish ({}); the events wait in the outbox and the relay retries "
                + "with backoff up to {} ms", failure.toString(), MAX_BACKOFF_MILLIS);
          }
          backoffMillis = Math.min(MAX_BACKOFF_MILLIS, Math.max(config.kafka().relayIntervalMillis(), backoffMillis * 2));
          relayLater(backoffMillis);
        });
  }

  /**
   * Fails if any send failed, but only once every send has ended (join, not all): the transaction rolls
   * back and the rows are tried again only when no send of theirs is still in flight, which would
   * otherwise publish them a second time.
   */
  private Future<Void> publish(KafkaProducer<String, String> producer, List<OutboxEvent> events) {
    String topic = config.kafka().eventsTopic();
    return Future.join(events.stream()
            .map(event -> producer.send(KafkaProducerRecord.create(topic, Long.toString(event.orderId()), event.payload())
                .addHeader(EVENT_ID_HEADER, Long.toString(event.eventId()))
                .addHeader(EVENT_TYPE_HEADER, event.type())))
            .toList())
        .mapEmpty();
  }
}
