package ordertimeout.cluster;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.kafka.client.producer.KafkaProducer;
import io.vertx.kafka.client.producer.KafkaProducerRecord;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.Revocation;
import ordertimeout.config.AppConfig;
import ordertimeout.kafka.KafkaClients;
import ordertimeout.kafka.OpenClients;
import ordertimeout.metrics.Meters;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderIds;
import ordertimeout.timer.OwnedShards;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
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
 * owner reads them (its position on the partition was settled before its load). A node that hears only after the group
 * gave the shard away (its session had expired) sends every timer its wheel held for it first.
 */
public final class TimerFanoutVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(TimerFanoutVerticle.class);
  private static final long WARN_EVERY_NANOS = TimeUnit.SECONDS.toNanos(30);
  private static final int MAX_SENDS_IN_FLIGHT = 10_000;
  private static final int HELD_RECORDS_IN_FLIGHT = 4;

  private final AppConfig config;
  private final NodeStats stats;
  private final OwnedShards owned;
  /** Made at the first send (after the group's first assignment, so after the topic check); null until then. */
  private Future<KafkaProducer<String, String>> producer;
  private final OpenClients producers = new OpenClients();
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
    EventBus bus = vertx.eventBus();
    return Future.join(
        bus.<Deadlines>consumer(Addresses.TIMER_SCHEDULE, message -> publishSchedule(message.body())).completion(),
        // moved timers travel as schedules: every copy from Kafka, and the local one, replaces the order's timer
        bus.<Deadlines>consumer(Addresses.TIMER_MOVE, message -> publishSchedule(message.body())).completion(),
        bus.<CancelTimers>consumer(Addresses.TIMER_CANCEL, message -> publishCancel(message.body())).completion(),
        bus.<Revocation>consumer(Addresses.SHARDS_HANDED_OVER, message -> handOver(message.body())).completion());
  }

  /**
   * While no broker answers, each send waits up to {@code kafka.deliveryTimeoutMillis} for the topic's
   * metadata, one after another, and the close waits behind them all; those messages would fail anyway
   * (their orders are in the database), so the undeploy waits no longer than one delivery timeout, and then at most
   * {@link OpenClients#closeAll(io.vertx.core.Vertx) a few seconds} for a producer left to close.
   */
  @Override
  public Future<?> stop() {
    int deliveryTimeoutMillis = config.kafka().deliveryTimeoutMillis();
    if (producer == null) {
      return closeProducersLeft();
    }
    return producer.transform(made -> made.succeeded()
            ? made.result().close().onSuccess(closed -> producers.forget(made.result().unwrap()))
            : Future.succeededFuture())
        .timeout(deliveryTimeoutMillis, TimeUnit.MILLISECONDS)
        .recover(failure -> {
          log.warn("the timer producer had not closed after {} ms ({}); timer messages still queued are dropped",
              deliveryTimeoutMillis, failure.toString());
          return Future.succeededFuture();
        })
        .eventually(this::closeProducersLeft);
  }

  /**
   * Closes without waiting a producer not closed above (its close timed out), or made after the stop (a send still
   * under way asked for one, or it was being made as the stop timed out): nothing would close it then.
   */
  private Future<Void> closeProducersLeft() {
    return producers.closeAll(vertx);
  }

  /**
   * Timers of owned shards go to this node's wheel, the others to Kafka. The timer ignores the timers of
   * shards it does not own, so a batch with any local timer goes to it whole.
   *
   * <p>Until the group first assigns this node shards (for a few seconds at a start; for as long as no broker answers
   * when it started without one, decision 0051) every timer stays in its own wheel, whatever its shard: the node cannot
   * tell whose a shard is, and before its topic check got through nothing of it may reach Kafka. Each order then closes
   * here, on time; its shard's owner, which never got the timer, is the net (its sweep, a grace later; or the catch-up
   * read of decision 0032 at the rebalance of this node's join), and a close from both is one compare-and-set that
   * wins. At the first assignment those of the shards gained are replaced by their load; the others also go to their
   * owners through Kafka ({@link #handOver}, sent by the timer as a loss with the timers it held), staying here too.
   */
  private void publishSchedule(Deadlines deadlines) {
    if (!owned.assigned()) {
      vertx.eventBus().send(Addresses.TIMER_KEPT_SCHEDULE, deadlines);
      remember(new LocalBatch(System.nanoTime(), deadlines, null));
      return;
    }
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
    if (!owned.assigned()) {
      vertx.eventBus().send(Addresses.TIMER_OWNED_CANCEL, cancel);
      remember(new LocalBatch(System.nanoTime(), null, cancel));
      return;
    }
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
   *
   * <p>Shards the group gave away before this node heard ({@link Revocation#lost()}: its membership had expired) may
   * have been loaded by their new owner long before, while this node went on taking their new orders: every timer the
   * wheel held for them goes first ({@link #sendHeld}), then the remembered ones, which are newer. So do, at the
   * group's first assignment, the timers kept before it for shards other nodes own.
   */
  private void handOver(Revocation revocation) {
    forgetOlderThanASession(System.nanoTime());
    int[] lostShards = revocation.shards();
    int shards = config.database().shards();
    boolean[] lost = new boolean[shards];
    Arrays.stream(lostShards).forEach(shard -> lost[shard] = true);
    RecordsByShard records = new RecordsByShard(shards);
    int timers = 0;
    for (LocalBatch batch : recentLocal) {
      long[] ids = batch.schedule() != null ? batch.schedule().orderIds() : batch.cancel().orderIds();
      for (int i = 0; i < ids.length; i++) {
        int shard = OrderIds.shardOf(ids[i], shards);
        if (!lost[shard]) {
          continue;
        }
        timers++;
        if (batch.schedule() == null) {
          TimerMessages.appendCancel(records.lineOf(shard, false), ids[i]);
        } else {
          TimerMessages.appendSchedule(records.lineOf(shard, true), ids[i], batch.schedule().closeAtMillis()[i],
              batch.schedule().remindAtMillis()[i]);
        }
      }
    }
    List<ShardRecord> recent = records.done();
    int recentTimers = timers;
    Deadlines held = revocation.held();
    long[] gains = owned.gains();
    // at the group's first assignment the shards others own were never this node's: nothing of theirs was lost here
    boolean neverOwnedHere = Arrays.stream(lostShards).allMatch(shard -> gains[shard] == 0);
    sendHeld(held, shards).onComplete(sent -> {
      recent.forEach(record -> send(record.shard(), record.text()));
      if (neverOwnedHere) {
        if (held.size() > 0) {
          log.info("sent the {} timers kept here before the group's first assignment for the {} shards other nodes "
              + "own to Kafka, for their owners{}; they stay in this wheel too", held.size(), lostShards.length,
              sent.succeeded() ? "" : " (not all: " + sent.cause().getMessage() + ")");
        }
        return;
      }
      if (recentTimers > 0) {
        log.info("sent {} timers of the lost shards {} handed out here in the last {} ms to Kafka, for their new owner",
            recentTimers, Arrays.toString(lostShards), config.kafka().sessionTimeoutMillis());
      }
      if (held.size() > 0) {
        log.info("sent the {} timers this node's wheel held for the shards {} to Kafka{}: their owners may lack the "
            + "orders taken here (the group gave the shards away before this node heard)", held.size(),
            Arrays.toString(lostShards),
            sent.succeeded() ? "" : " (not all: " + sent.cause().getMessage() + ")");
      }
    });
  }

  /** Records of one shard's timer lines, at most {@link TimerMessages#MAX_LINES_PER_RECORD} lines each. */
  private record ShardRecord(int shard, StringBuilder text) {}

  /** Lines gathered per shard into records, each closed when full or when a schedule would follow a cancel. */
  private static final class RecordsByShard {
    private final StringBuilder[] open;
    private final int[] lines;
    private final List<ShardRecord> closed = new ArrayList<>();

    RecordsByShard(int shards) {
      open = new StringBuilder[shards];
      lines = new int[shards];
    }

    /** Where the next line of {@code shard} goes. */
    StringBuilder lineOf(int shard, boolean schedule) {
      if (open[shard] != null && (lines[shard] == TimerMessages.MAX_LINES_PER_RECORD
          || schedule && TimerMessages.endsWithCancel(open[shard]))) {
        closed.add(new ShardRecord(shard, open[shard]));
        open[shard] = null;
      }
      if (open[shard] == null) {
        open[shard] = new StringBuilder();
        lines[shard] = 0;
      }
      lines[shard]++;
      return open[shard];
    }

    /** Every record, each shard's in the order of its lines. */
    List<ShardRecord> done() {
      for (int shard = 0; shard < open.length; shard++) {
        if (open[shard] != null) {
          closed.add(new ShardRecord(shard, open[shard]));
        }
      }
      return closed;
    }
  }

  /**
   * Sends {@code held} (one timer a line) to their shards' partitions, made into records only as they go: at most
   * {@value #HELD_RECORDS_IN_FLIGHT} records (about a megabyte) wait for the broker at once, so that a million timers
   * (some 60 MB of lines) neither fill the producer's buffer nor hold the event loop while they are written. Completes
   * once the last record was handed to the producer, or failed at the first that could not be sent (the rest are left:
   * their orders are in the database, the new owner's sweep closes them).
   */
  private Future<Void> sendHeld(Deadlines held, int shards) {
    return held.size() == 0 ? Future.succeededFuture() : new HeldSender(held, shards).start();
  }

  private final class HeldSender {
    private final Deadlines held;
    private final int shards;
    /** Positions in {@code held}, grouped by shard (a counting sort); shard s's are from ends[s - 1] (0 for s = 0). */
    private final int[] byShard;
    private final int[] ends;
    private final Promise<Void> issued = Promise.promise();
    private int position;
    private int inFlight;
    private boolean failed;

    HeldSender(Deadlines held, int shards) {
      this.held = held;
      this.shards = shards;
      byShard = new int[held.size()];
      ends = new int[shards];
      for (long id : held.orderIds()) {
        ends[OrderIds.shardOf(id, shards)]++;
      }
      for (int shard = 1; shard < shards; shard++) {
        ends[shard] += ends[shard - 1];
      }
      int[] next = new int[shards];
      for (int shard = 1; shard < shards; shard++) {
        next[shard] = ends[shard - 1];
      }
      for (int i = 0; i < held.size(); i++) {
        byShard[next[OrderIds.shardOf(held.orderIds()[i], shards)]++] = i;
      }
    }

    Future<Void> start() {
      pump();
      return issued.future();
    }

    private void pump() {
      while (!failed && inFlight < HELD_RECORDS_IN_FLIGHT && position < byShard.length) {
        int shard = OrderIds.shardOf(held.orderIds()[byShard[position]], shards);
        StringBuilder text = new StringBuilder();
        for (int lines = 0; lines < TimerMessages.MAX_LINES_PER_RECORD && position < ends[shard]; lines++) {
          int i = byShard[position++];
          TimerMessages.appendSchedule(text, held.orderIds()[i], held.closeAtMillis()[i], held.remindAtMillis()[i]);
        }
        inFlight++;
        send(shard, text).onComplete(sent -> {
          inFlight--;
          if (sent.failed() && !failed) {
            failed = true;
            issued.tryFail(sent.cause());
          }
          pump();
        });
      }
      if (position == byShard.length) {
        issued.tryComplete();
      }
    }
  }

  /** The producer, made when first asked for, and made again at the next ask if that failed. */
  private Future<KafkaProducer<String, String>> producer() {
    if (producer == null || producer.failed()) {
      Map<String, String> settings = KafkaClients.producer(config, "timers");
      // With no broker to ask for the topic's partitions, a send fails after a second instead of queueing
      // behind the others for a delivery timeout each: its order is in the database, and the sweep closes it.
      settings.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "1000");
      producer = KafkaClients.producerOf(vertx, settings, producers).onSuccess(made ->
          // each failed send also fails its future, which send() counts; without a handler Vert.x logs each as an ERROR
          made.exceptionHandler(failure -> log.debug("timer send failed: {}", failure.toString())));
    }
    return producer;
  }

  /**
   * While no broker answers, sends wait their turn on the producer's worker for up to a second each;
   * past {@value #MAX_SENDS_IN_FLIGHT} waiting, new timers are not queued behind them but counted as not
   * published (their orders are in the database: the sweep, or the owner's next load, finds them).
   */
  private Future<Void> send(int shard, StringBuilder text) {
    if (sendsInFlight >= MAX_SENDS_IN_FLIGHT) {
      IllegalStateException full =
          new IllegalStateException(sendsInFlight + " timer messages already waiting for the broker");
      failed(shard, full);
      return Future.failedFuture(full);
    }
    sendsInFlight++;
    String topic = config.kafka().timersTopic();
    KafkaProducerRecord<String, String> record =
        KafkaProducerRecord.create(topic, Integer.toString(shard), text.toString(), shard);
    return producer().compose(made -> made.send(record))
        .onComplete(sent -> sendsInFlight--)
        .onFailure(failure -> failed(shard, failure))
        .mapEmpty();
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
