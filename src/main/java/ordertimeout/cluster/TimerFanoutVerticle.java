package ordertimeout.cluster;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.kafka.client.producer.KafkaProducer;
import io.vertx.kafka.client.producer.KafkaProducerRecord;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.ShardChange;
import ordertimeout.config.AppConfig;
import ordertimeout.kafka.KafkaClients;
import ordertimeout.metrics.Meters;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderIds;
import ordertimeout.timer.OwnedShards;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * In a cluster, takes the timers this node's intake and close verticles hand out (which any node may
 * own): those of shards this node owns go straight into its wheel, the others to the timer topic, on
 * the partition numbered like the order's shard, where their owner's consumer takes them. They leave
 * after the database commit, so a message that is lost costs only speed: the sweep of the owner (or
 * the next owner's reload) finds the order in the database.
 *
 * <p>A node learns that it lost a shard a little after the group decided it (the consumer's callback
 * runs on this node's event loop; a node paused past its session learns at its next heartbeat). A
 * timer it kept local meanwhile may have come after the new owner's load; so the local timers of the
 * last session timeout are kept, and on a loss those of the lost shards go to Kafka, where the new
 * owner reads them (its position on the partition was settled before its load).
 */
public final class TimerFanoutVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(TimerFanoutVerticle.class);
  private static final long WARN_EVERY_NANOS = TimeUnit.SECONDS.toNanos(30);
  private static final int MAX_SENDS_IN_FLIGHT = 10_000;

  private final AppConfig config;
  private final NodeStats stats;
  private final OwnedShards owned;
  private KafkaProducer<String, String> producer;
  private long lastWarning = System.nanoTime() - WARN_EVERY_NANOS;
  private int sendsInFlight;
  /** Batches that held timers of owned shards, oldest first; each went to this node's wheel and not to Kafka. */
  private final Deque<LocalBatch> recentLocal = new ArrayDeque<>();

  /** A schedule or a cancel, as handed out. */
  private record LocalBatch(long atNanos, Deadlines schedule, CancelTimers cancel) {}

  public TimerFanoutVerticle(AppConfig config, NodeStats stats, OwnedShards owned) {
    this.config = config;
    this.stats = stats;
    this.owned = owned;
  }

  @Override
  public Future<?> start() {
    Map<String, String> settings = KafkaClients.producer(config, "timers");
    // With no broker to ask for the topic's partitions, a send fails after a second instead of queueing
    // behind the others for a delivery timeout each: its order is in the database, and the sweep closes it.
    settings.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "1000");
    producer = KafkaProducer.create(vertx, settings);
    // each failed send also fails its future, which send() counts; without a handler Vert.x logs every one as an ERROR
    producer.exceptionHandler(failure -> log.debug("timer send failed: {}", failure.toString()));
    EventBus bus = vertx.eventBus();
    return Future.join(
        bus.<Deadlines>consumer(Addresses.TIMER_SCHEDULE, message -> publishSchedule(message.body())).completion(),
        // moved timers travel as schedules: every copy from Kafka, and the local one, replaces the order's timer
        bus.<Deadlines>consumer(Addresses.TIMER_MOVE, message -> publishSchedule(message.body())).completion(),
        bus.<CancelTimers>consumer(Addresses.TIMER_CANCEL, message -> publishCancel(message.body())).completion(),
        bus.<ShardChange>consumer(Addresses.SHARDS_HANDED_OVER, message -> handOver(message.body().shards())).completion());
  }

  /**
   * While no broker answers, each send waits up to {@code kafka.deliveryTimeoutMillis} for the topic's
   * metadata, one after another, and the close waits behind them all; those messages would fail anyway
   * (their orders are in the database), so the undeploy waits no longer than one delivery timeout.
   */
  @Override
  public Future<?> stop() {
    int deliveryTimeoutMillis = config.kafka().deliveryTimeoutMillis();
    return producer.close()
        .timeout(deliveryTimeoutMillis, TimeUnit.MILLISECONDS)
        .recover(failure -> {
          log.warn("the timer producer had not closed after {} ms ({}); timer messages still queued are dropped",
              deliveryTimeoutMillis, failure.toString());
          return Future.succeededFuture();
        });
  }

  /**
   * Timers of owned shards go to this node's wheel, the others to Kafka. The timer ignores the timers of
   * shards it does not own, so a batch with any local timer goes to it whole.
   */
  private void publishSchedule(Deadlines deadlines) {
    int shards = config.database().shards();
    Map<Integer, StringBuilder> byShard = new TreeMap<>();
    boolean anyLocal = false;
    for (int i = 0; i < deadlines.size(); i++) {
      long id = deadlines.orderIds()[i];
      int shard = OrderIds.shardOf(id, shards);
      if (owned.owns(shard)) {
        anyLocal = true;
      } else {
        TimerMessages.appendSchedule(byShard.computeIfAbsent(shard, s -> new StringBuilder()),
            id, deadlines.closeAtMillis()[i], deadlines.remindAtMillis()[i]);
      }
    }
    if (anyLocal) {
      vertx.eventBus().send(Addresses.TIMER_OWNED_SCHEDULE, deadlines);
      remember(new LocalBatch(System.nanoTime(), deadlines, null));
    }
    byShard.forEach(this::send);
  }

  private void publishCancel(CancelTimers cancel) {
    int shards = config.database().shards();
    Map<Integer, StringBuilder> byShard = new TreeMap<>();
    boolean anyLocal = false;
    for (long id : cancel.orderIds()) {
      int shard = OrderIds.shardOf(id, shards);
      if (owned.owns(shard)) {
        anyLocal = true;
      } else {
        TimerMessages.appendCancel(byShard.computeIfAbsent(shard, s -> new StringBuilder()), id);
      }
    }
    if (anyLocal) {
      vertx.eventBus().send(Addresses.TIMER_OWNED_CANCEL, cancel);
      remember(new LocalBatch(System.nanoTime(), null, cancel));
    }
    byShard.forEach(this::send);
  }

  /** Keeps the batch for a session timeout: at 1,000 orders a second and 10 s, about 10,000 timers. */
  private void remember(LocalBatch batch) {
    recentLocal.addLast(batch);
    forgetOlderThanASession(batch.atNanos());
  }

  private void forgetOlderThanASession(long nowNanos) {
    long keepNanos = TimeUnit.MILLISECONDS.toNanos(config.kafka().sessionTimeoutMillis());
    while (!recentLocal.isEmpty() && nowNanos - recentLocal.peekFirst().atNanos() > keepNanos) {
      recentLocal.removeFirst();
    }
  }

  /**
   * Sends the remembered timers of the lost shards to Kafka, in the order they were handed out. Runs after
   * {@link OwnedShards} dropped the shards, so a timer handed out later goes to Kafka by itself. A record
   * decodes its schedules before its cancels, so a shard's record ends where a schedule follows a cancel.
   * The new owner takes a timer it also loaded as a replacement, and a cancel of a timer it does not hold
   * as nothing.
   */
  private void handOver(int[] lostShards) {
    forgetOlderThanASession(System.nanoTime());
    int shards = config.database().shards();
    boolean[] lost = new boolean[shards];
    Arrays.stream(lostShards).forEach(shard -> lost[shard] = true);
    Map<Integer, StringBuilder> byShard = new TreeMap<>();
    int timers = 0;
    for (LocalBatch batch : recentLocal) {
      long[] ids = batch.schedule() != null ? batch.schedule().orderIds() : batch.cancel().orderIds();
      for (int i = 0; i < ids.length; i++) {
        int shard = OrderIds.shardOf(ids[i], shards);
        if (!lost[shard]) {
          continue;
        }
        timers++;
        StringBuilder text = byShard.computeIfAbsent(shard, s -> new StringBuilder());
        if (batch.schedule() == null) {
          TimerMessages.appendCancel(text, ids[i]);
          continue;
        }
        if (TimerMessages.endsWithCancel(text)) {
          send(shard, byShard.remove(shard));
          text = byShard.computeIfAbsent(shard, s -> new StringBuilder());
        }
        TimerMessages.appendSchedule(text, ids[i], batch.schedule().closeAtMillis()[i], batch.schedule().remindAtMillis()[i]);
      }
    }
    byShard.forEach(this::send);
    if (timers > 0) {
      log.info("sent {} timers of the lost shards {} handed out here in the last {} ms to Kafka, for their new owner",
          timers, Arrays.toString(lostShards), config.kafka().sessionTimeoutMillis());
    }
  }

  /**
   * While no broker answers, sends wait their turn on the producer's worker for up to a second each;
   * past {@value #MAX_SENDS_IN_FLIGHT} waiting, new timers are not queued behind them but counted as not
   * published (their orders are in the database: the sweep, or the owner's next load, finds them).
   */
  private void send(int shard, StringBuilder text) {
    if (sendsInFlight >= MAX_SENDS_IN_FLIGHT) {
      failed(shard, new IllegalStateException(sendsInFlight + " timer messages already waiting for the broker"));
      return;
    }
    sendsInFlight++;
    producer.send(KafkaProducerRecord.create(config.kafka().timersTopic(), Integer.toString(shard), text.toString(), shard))
        .onComplete(sent -> sendsInFlight--)
        .onFailure(failure -> failed(shard, failure));
  }

  private void failed(int shard, Throwable failure) {
    stats.timerPublishFailed(1);
    long now = System.nanoTime();
    if (now - lastWarning >= WARN_EVERY_NANOS) {
      lastWarning = now;
      log.warn("a timer message for shard {} did not reach Kafka ({}); its orders are closed by the sweep of the "
          + "shard's owner instead (this warning repeats at most every 30 s; see {})",
          shard, failure.toString(), Meters.TIMER_PUBLISH_FAILURES);
    }
  }
}
