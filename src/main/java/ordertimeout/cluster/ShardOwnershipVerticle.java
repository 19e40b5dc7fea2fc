package ordertimeout.cluster;

import io.micrometer.core.instrument.binder.kafka.KafkaClientMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.kafka.client.common.TopicPartition;
import io.vertx.kafka.client.consumer.KafkaConsumer;
import io.vertx.kafka.client.consumer.KafkaConsumerRecord;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.Revocation;
import ordertimeout.bus.ShardChange;
import ordertimeout.config.AppConfig;
import ordertimeout.kafka.BrokerTopics;
import ordertimeout.kafka.KafkaClients;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.LeasedOrderIds;
import ordertimeout.timer.OwnedShards;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;

/**
 * This node's membership of the consumer group on the timer topic: the partitions the group assigns
 * are the shards this node owns. On assignment the timer loads those shards from the database; on
 * revocation it drops them. Records are timers of owned shards, handed to the local wheel.
 *
 * <p>Why nothing falls between the two: a new owner reads a partition from the offset the previous
 * owner committed (every second, and when the partition is revoked), or from its end when nobody did,
 * settled before the load starts. A timer after that offset is delivered; one before it was polled by
 * the previous owner, or published before the end was fixed, so its order was committed to the
 * database before the load, which reads it. A timer the previous owner kept for its own wheel (it had
 * not heard of the loss yet) reaches Kafka when it does hear, after that position was settled (see
 * {@link TimerFanoutVerticle}). Records fetched after the last commit are delivered again to the new
 * owner; the timer takes a repeated timer as a replacement, not a second one.
 *
 * <p>A node that cannot reach the database cannot close its shards' orders, nor can anyone else while it owns them:
 * once its lease on {@code node.id} lapsed for the database's absence (no renewal got through for about
 * {@code node.leaseSeconds}, see {@link LeasedOrderIds#lapsedForTheDatabase}), it gives up its shards and leaves the
 * group, so that the nodes that reach the database take them and load their orders. It joins again once every renewal
 * for a third of the lease (at least two in a row) got through: slow to leave, slower to come back, so that a database
 * that answers now and then does not move the shards back and forth at every answer.
 *
 * <p>A node that started without the broker joins once its topic check gets through (decision 0051).
 */
public final class ShardOwnershipVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(ShardOwnershipVerticle.class);
  private static final DeliveryOptions RELOAD = new DeliveryOptions().setSendTimeout(600_000);
  /** How often the node looks at its lease to leave or join the group. */
  private static final long DATABASE_CHECK_MILLIS = 500;
  /** A consumer that cannot be made (its bootstrap hosts do not resolve) fails every try: logged once a minute. */
  private static final long MAKE_FAILURE_LOG_NANOS = TimeUnit.MINUTES.toNanos(1);

  private final AppConfig config;
  private final OwnedShards owned;
  private final NodeStats stats;
  private final LeasedOrderIds ids;
  /** Whether the topic check got through to the broker ({@link BrokerTopics#ready}): nothing joins before. */
  private final BooleanSupplier topicsReady;
  /** Makes the Kafka consumer of a new membership; called off the event loop (it resolves the bootstrap hosts). */
  private final Callable<OwnershipConsumer> kafkaConsumers;
  private final BiFunction<Vertx, OwnershipConsumer, KafkaConsumer<String, String>> consumers;
  /** This node's membership of the group; null while it stays out (it cannot reach the database) and once stopped. */
  private Membership member;
  /** The membership {@link #stop} closes: it reports its revocation as it closes, and no membership follows it. */
  private Membership stopping;
  /** The close of the last membership left (bounded); a new one waits for it. */
  private Future<?> leaving = Future.succeededFuture();
  private long databaseCheck = -1;
  /** Whether this verticle ever joined the group: the first join may wait for the broker, later ones the database. */
  private boolean joinedOnce;
  /** The last try to join, until its consumer is made and subscribed (or it failed); none starts before it ended. */
  private Future<Void> joining = Future.succeededFuture();
  private boolean stopped;
  /** Tries in a row whose consumer could not be made, and when the last of them was logged. */
  private long makeFailures;
  private long makeFailureLoggedAtNanos;

  /** One consumer's membership: a node that left the group and joins again does so with a new consumer. */
  private record Membership(OwnershipConsumer kafka, KafkaConsumer<String, String> consumer,
                            KafkaClientMetrics metrics) {}

  public ShardOwnershipVerticle(AppConfig config, OwnedShards owned, NodeStats stats, LeasedOrderIds ids,
                                BrokerTopics topics) {
    this(config, owned, stats, ids, topics::ready, (vertx, kafka) -> KafkaConsumer.create(vertx, kafka));
  }

  /** {@code consumers} wraps each new Kafka consumer for Vert.x; a test hands out consumers it calls back itself. */
  ShardOwnershipVerticle(AppConfig config, OwnedShards owned, NodeStats stats, LeasedOrderIds ids,
                         BooleanSupplier topicsReady,
                         BiFunction<Vertx, OwnershipConsumer, KafkaConsumer<String, String>> consumers) {
    this(config, owned, stats, ids, topicsReady,
        () -> new OwnershipConsumer(KafkaClients.ownershipConsumer(config), config.kafka().timersTopic()), consumers);
  }

  /** {@code kafkaConsumers} makes each new Kafka consumer (off the event loop); {@code consumers} wraps it. */
  ShardOwnershipVerticle(AppConfig config, OwnedShards owned, NodeStats stats, LeasedOrderIds ids,
                         BooleanSupplier topicsReady, Callable<OwnershipConsumer> kafkaConsumers,
                         BiFunction<Vertx, OwnershipConsumer, KafkaConsumer<String, String>> consumers) {
    this.config = config;
    this.owned = owned;
    this.stats = stats;
    this.ids = ids;
    this.topicsReady = topicsReady;
    this.kafkaConsumers = kafkaConsumers;
    this.consumers = consumers;
  }

  @Override
  public Future<?> start() {
    databaseCheck = vertx.setPeriodic(DATABASE_CHECK_MILLIS, id -> followTheDatabase());
    if (!topicsReady.getAsBoolean()) {
      log.warn("the topic check has not reached the Kafka broker: this node joins the timer group (and owns shards) "
          + "once it does");
      return Future.succeededFuture();
    }
    if (ids.lapsedForTheDatabase()) {
      log.warn("the database could not be reached to take the lease on node.id: this node joins the timer group (and "
          + "owns shards) once it can");
      return Future.succeededFuture();
    }
    return tryToJoin();
  }

  /**
   * Leaving the group lets the others take this node's shards at once instead of after the session
   * timeout. When no broker answers, the consumer's close waits 30 s (the Kafka client's default, which
   * the Vert.x client does not let one change) to commit and leave; past the session timeout the group
   * has dropped this member anyway, so the undeploy (and a drain) waits no longer than that and the close
   * goes on in the background. A consumer still being made is closed unused when it comes.
   */
  @Override
  public Future<?> stop() {
    vertx.cancelTimer(databaseCheck);
    stopped = true;
    Membership current = member;
    member = null;
    stopping = current;
    // a consumer still being made is closed when it comes (joinOrClose): wait for that too, as long as for a close
    Future<Void> made = joining.timeout(config.kafka().sessionTimeoutMillis(), TimeUnit.MILLISECONDS)
        .recover(failure -> Future.succeededFuture());
    return Future.join(current == null ? leaving : close(current), made);
  }

  /**
   * Joins with a new consumer, made off the event loop (making one resolves the bootstrap hosts, a blocking lookup that
   * throws when none resolves). A failure is logged and left for {@link #followTheDatabase} to try again with a new
   * consumer; the failed one's close is bounded as any other's.
   */
  private Future<Void> tryToJoin() {
    joining = vertx.executeBlocking(kafkaConsumers, false)
        .onFailure(this::madeNoConsumer)
        .compose(this::joinOrClose)
        .recover(failure -> Future.succeededFuture());
    return joining;
  }

  /**
   * Joins with {@code kafka}, or closes it unused when the verticle stopped meanwhile: nobody else would close it. A
   * join that fails closes what it made: the bare client when it failed before the Vert.x consumer was made, the
   * membership after, unless a stop or a lapsed lease closed that already.
   */
  private Future<Void> joinOrClose(OwnershipConsumer kafka) {
    if (stopped) {
      return closeUnused(kafka);
    }
    if (makeFailures > 0) {
      log.info("made the timer consumer after {} tries that failed", makeFailures);
      makeFailures = 0;
    }
    Membership joined;
    try {
      KafkaClientMetrics metrics = new KafkaClientMetrics(kafka); // lag per partition, fetch rates
      joined = new Membership(kafka, consumers.apply(vertx, kafka), metrics);
    } catch (RuntimeException failure) {
      log.error("joining the timer group failed; trying again", failure);
      leaving = closeUnused(kafka).recover(closing -> Future.succeededFuture());
      return Future.failedFuture(failure);
    }
    member = joined;
    joinedOnce = true;
    // anything subscribe throws is a failed join too, logged and tried again
    return Future.<Void>succeededFuture().compose(go -> subscribe(joined)).onFailure(failure -> {
      if (member == joined) { // else a stop or a lapsed lease closes it already
        log.error("joining the timer group failed; trying again", failure);
        member = null;
        leaving = close(joined);
      }
    });
  }

  private Future<Void> closeUnused(OwnershipConsumer kafka) {
    return vertx.executeBlocking(() -> {
      kafka.close(Duration.ZERO);
      return null;
    }, false);
  }

  /** Making a consumer fails when none of its bootstrap hosts resolves: a WARN line at the first and once a minute. */
  private void madeNoConsumer(Throwable failure) {
    makeFailures++;
    if (makeFailures == 1 || System.nanoTime() - makeFailureLoggedAtNanos >= MAKE_FAILURE_LOG_NANOS) {
      makeFailureLoggedAtNanos = System.nanoTime();
      Throwable cause = failure; // the client wraps the reason in "Failed to construct kafka consumer"
      while (cause.getCause() != null) {
        cause = cause.getCause();
      }
      log.warn("could not make the timer consumer to join the timer group ({}; tries that failed in a row: {}); "
          + "trying again every {} ms", cause.toString(), makeFailures, DATABASE_CHECK_MILLIS);
    }
  }

  private Future<Void> subscribe(Membership joined) {
    KafkaConsumer<String, String> consumer = joined.consumer();
    consumer.handler(this::onRecord);
    consumer.partitionsAssignedHandler(partitions -> {
      if (member == joined) { // not a consumer this node is leaving with
        onAssigned(consumer, partitions);
      }
    });
    consumer.partitionsRevokedHandler(partitions -> onRevoked(joined, partitions));
    consumer.exceptionHandler(failure -> log.warn("timer consumer: {}", failure.toString()));
    joined.metrics().bindTo(stats.registry());
    return consumer.subscribe(config.kafka().timersTopic());
  }

  private Future<Void> close(Membership leaving) {
    leaving.metrics().close();
    int sessionTimeoutMillis = config.kafka().sessionTimeoutMillis();
    return leaving.consumer().close()
        .timeout(sessionTimeoutMillis, TimeUnit.MILLISECONDS)
        .recover(failure -> {
          log.warn("the timer consumer had not left the group after {} ms ({}); its shards move when the session expires",
              sessionTimeoutMillis, failure.toString());
          return Future.succeededFuture();
        });
  }

  /**
   * Leaves the group once the lease lapsed for the database's absence, and joins again once the database has answered
   * every renewal for a third of the lease. A node whose database is away owns nothing: its wheel, its sweep and its
   * webhooks could do nothing with them; with every node cut off, none owns shards until one reaches it again.
   */
  private void followTheDatabase() {
    long rejoinAfterMillis = config.node().leaseSeconds() * 1000L / 3;
    if (member != null && ids.lapsedForTheDatabase()) {
      Membership current = member;
      member = null;
      int[] shards = owned.list();
      log.warn("the lease on node.id lapsed: the database has not answered a renewal for about node.leaseSeconds "
          + "({} s); leaving the timer group so that nodes that reach it take this node's {} shards, back once the "
          + "database has answered for {} ms", config.node().leaseSeconds(), shards.length, rejoinAfterMillis);
      if (shards.length > 0) {
        revoke(shards, false); // now, not when the closing consumer calls back: by then they are given up already
      }
      leaving = close(current);
    } else if (member == null && leaving.isComplete() && joining.isComplete() && topicsReady.getAsBoolean()
        && ids.reachedTheDatabaseFor(rejoinAfterMillis * 1_000_000)) {
      if (makeFailures > 0) {
        log.debug("trying again to make the timer consumer");
      } else if (joinedOnce) {
        log.info("the database has answered this node's lease renewals for {} ms: joining the timer group again",
            rejoinAfterMillis);
      } else {
        log.info("joining the timer group");
      }
      tryToJoin();
    }
  }

  private void onAssigned(KafkaConsumer<String, String> consumer, Set<TopicPartition> partitions) {
    int[] shards = shardsOf(partitions);
    long heardAtMillis = config.node().wallClock().millis();
    ShardChange change = new ShardChange(shards, owned.add(shards), heardAtMillis);
    long started = System.nanoTime();
    positionsOf(consumer, partitions)
        .compose(positioned -> vertx.eventBus().request(Addresses.SHARDS_ASSIGNED, change, RELOAD))
        .onSuccess(loaded -> {
          if (shards.length > 0) {
            log.info("took shards {} in {} ms; this node owns {} shards now", Arrays.toString(shards),
                (System.nanoTime() - started) / 1_000_000, owned.list().length);
          }
        })
        .onFailure(failure -> log.error("taking shards {} failed; their sweep still closes their orders",
            Arrays.toString(shards), failure));
  }

  /**
   * Where the consumer starts on each gained partition, settled before the load reads the database: a
   * partition nobody committed an offset for starts at its end, and that end must be fixed before the
   * load begins for the argument above to hold. Bounded, since a partition revoked meanwhile never answers.
   */
  private Future<Void> positionsOf(KafkaConsumer<String, String> consumer, Set<TopicPartition> partitions) {
    if (partitions.isEmpty()) {
      return Future.succeededFuture();
    }
    return Future.join(partitions.stream().map(consumer::position).toList())
        .timeout(config.kafka().sessionTimeoutMillis(), TimeUnit.MILLISECONDS)
        .<Void>mapEmpty()
        .recover(failure -> {
          log.warn("could not settle the positions of {} before loading them ({}); loading anyway", partitions, failure.toString());
          return Future.succeededFuture();
        });
  }

  /**
   * Drops the shards; the timer fan-out then sends the timers of theirs this node kept for its own wheel lately
   * (decision 0025). Shards the group had given away before this node heard ({@link OwnershipConsumer}: lost, not
   * revoked) were loaded by their new owners while this node may have gone on taking their new orders for as long as
   * it could not reach the broker: the timers the wheel holds for them go to their partitions too, first.
   *
   * <p>Only the current membership's callbacks count (and, as the node stops, the one it closes), as for assignments.
   * A consumer the node left the group with gave up its shards when it left; its close may report them much later
   * (it waits up to 30 s for a broker, the node only a session timeout), when the node has joined again: the shards
   * it names may then belong to the new membership, and dropping them would leave them in no wheel here while the
   * group thinks this node owns them.
   */
  private void onRevoked(Membership from, Set<TopicPartition> partitions) {
    int[] revoked = shardsOf(partitions);
    boolean lost = from.kafka().tookLost(revoked);
    if (from != member && from != stopping) {
      log.info("ignored shards {} reported {} by a consumer this node left the group with: it gave them up when it "
          + "left", Arrays.toString(revoked), lost ? "lost" : "revoked");
      return;
    }
    int[] shards = Arrays.stream(revoked).filter(owned::owns).toArray(); // those this node did not give up already
    if (shards.length > 0) {
      revoke(shards, lost);
    }
  }

  private void revoke(int[] shards, boolean lost) {
    owned.remove(shards);
    Revocation revocation = new Revocation(shards, lost, Deadlines.EMPTY);
    if (!lost) {
      vertx.eventBus().send(Addresses.SHARDS_HANDED_OVER, revocation);
    }
    vertx.eventBus().<Deadlines>request(Addresses.SHARDS_REVOKED, revocation)
        .onComplete(dropped -> {
          if (lost) {
            Deadlines held = dropped.succeeded() ? dropped.result().body() : Deadlines.EMPTY;
            vertx.eventBus().send(Addresses.SHARDS_HANDED_OVER, new Revocation(shards, true, held));
          }
        })
        .onSuccess(dropped -> log.info("gave up shards {}{}; this node owns {} shards now", Arrays.toString(shards),
            lost ? " (lost: the group had given them away before this node heard)" : "", owned.list().length))
        .onFailure(failure -> {
          if (failure instanceof ReplyException reply && reply.failureType() == ReplyFailure.NO_HANDLERS) {
            log.debug("shards {} revoked while the node stops: the timer is gone already", Arrays.toString(shards));
          } else {
            log.error("dropping the timers of shards {} failed; they fire here too, harmlessly", Arrays.toString(shards), failure);
          }
        });
  }

  private void onRecord(KafkaConsumerRecord<String, String> record) {
    TimerMessages.Decoded decoded = TimerMessages.decode(record.value());
    if (decoded.unreadable() > 0) {
      log.warn("skipped {} unreadable lines of a record on {} partition {} offset {}", decoded.unreadable(),
          record.topic(), record.partition(), record.offset());
    }
    if (decoded.schedule().size() > 0) {
      vertx.eventBus().send(Addresses.TIMER_OWNED_SCHEDULE, decoded.schedule());
    }
    if (decoded.cancel().orderIds().length > 0) {
      vertx.eventBus().send(Addresses.TIMER_OWNED_CANCEL, decoded.cancel());
    }
  }

  private int[] shardsOf(Set<TopicPartition> partitions) {
    return partitions.stream()
        .filter(partition -> partition.getTopic().equals(config.kafka().timersTopic()))
        .mapToInt(TopicPartition::getPartition)
        .sorted()
        .toArray();
  }
}
