package ordertimeout.timer;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.DueOrders;
import ordertimeout.bus.Revocation;
import ordertimeout.bus.ShardChange;
import ordertimeout.clock.WallClock;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderIds;
import ordertimeout.store.DeadlineStore.PageCursor;
import ordertimeout.store.DeadlineStore.PendingPage;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.Pools;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntPredicate;
import java.util.function.IntToLongFunction;
import java.util.function.LongPredicate;
import java.util.stream.IntStream;

/**
 * Owns the time wheel of this node's shards. One node alone owns every shard: it reloads every pending
 * deadline and reminder from PostgreSQL before it takes new ones. In a cluster it starts empty and
 * loads the shards the consumer group gives it ({@link Addresses#SHARDS_ASSIGNED}), dropping those it
 * loses; until the group first assigns it shards it also keeps the timers this node hands out, whatever their shards
 * ({@link Addresses#TIMER_KEPT_SCHEDULE}). Every tick it hands the due order ids to the close verticle in batches.
 */
public final class TimerVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(TimerVerticle.class);
  private static final int PARALLEL_RELOADS = 4;

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final OwnedShards owned;
  private final boolean clustered;
  private final WallClock clock;
  private TimeWheel wheel;
  private DeadlineStore store;
  private long tickTimer = -1;
  /** Clustered: the group has not assigned this node shards yet, and the wheel keeps timers of every shard. */
  private boolean keepingEveryShard;

  public TimerVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, OwnedShards owned) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.owned = owned;
    this.clustered = config.kafka().enabled();
    this.clock = config.node().wallClock();
    this.keepingEveryShard = clustered;
  }

  @Override
  public Future<?> start() {
    store = new DeadlineStore(Pools.shared(vertx, Pools.DEADLINES, connectOptions, config.database().poolSize(), 1,
        config.database().deadlines()), config.node().wallClock());
    wheel = new TimeWheel(config.timer().tickMillis(), clock.millis(), 1 << 16);
    EventBus bus = vertx.eventBus();
    Future<Void> ready = clustered
        ? Future.join(
            bus.<Deadlines>consumer(Addresses.TIMER_OWNED_SCHEDULE, message -> schedule(message.body(), true)).completion(),
            bus.<Deadlines>consumer(Addresses.TIMER_KEPT_SCHEDULE,
                message -> schedule(message.body(), true, shard -> true)).completion(),
            bus.<CancelTimers>consumer(Addresses.TIMER_OWNED_CANCEL, message -> cancel(message.body())).completion(),
            bus.<ShardChange>consumer(Addresses.SHARDS_ASSIGNED, this::onAssigned).completion(),
            bus.<Revocation>consumer(Addresses.SHARDS_REVOKED, this::onRevoked).completion()).mapEmpty()
        : reload(owned.list(), OwnedShards.FROM_THE_START, false)
            .compose(loaded -> Future.join(
                bus.<Deadlines>consumer(Addresses.TIMER_SCHEDULE, message -> schedule(message.body(), false)).completion(),
                bus.<Deadlines>consumer(Addresses.TIMER_MOVE, message -> schedule(message.body(), true)).completion(),
                bus.<CancelTimers>consumer(Addresses.TIMER_CANCEL, message -> cancel(message.body())).completion()))
            .mapEmpty();
    return ready.onSuccess(started -> tickTimer = vertx.setPeriodic(config.timer().tickMillis(), id -> fireDue()));
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(tickTimer);
    wheel.clear();
    stats.timersCleared();
    owned.forgetLoaded();
    return Future.succeededFuture();
  }

  /**
   * New shards: their timers may already have been published by another node before this one was
   * subscribed, so they are read from the database, replacing any that arrived through Kafka meanwhile.
   * A rebalance that leaves this node shards it kept may be one in which a node left the group (with nothing gained
   * here when others took its shards, or when it owned none); it may have died with timers of the kept shards still
   * in its producer, so those shards' recent orders are read again too ({@link #catchUpUntilDone}).
   */
  private void onAssigned(Message<ShardChange> message) {
    if (keepingEveryShard) {
      keepingEveryShard = false;
      handOverKept();
    }
    int[] shards = message.body().shards();
    int[] kept = Arrays.stream(owned.list())
        .filter(shard -> Arrays.stream(shards).noneMatch(gained -> gained == shard))
        .toArray();
    if (kept.length > 0) {
      long since = message.body().heardAtMillis() - catchUpMillis();
      catchUpUntilDone(kept, owned.gains(), OrderIds.firstIdAt(since) - 1);
    }
    reloadUntilLoaded(shards, message.body().gain()).onComplete(loaded -> message.reply(shards.length));
  }

  /**
   * How far back a node that left may have minted the ids of orders whose timers never reached Kafka: it commits an
   * order up to a request deadline after minting its id, its producer tries the record for up to a delivery timeout,
   * and the group tells the others of its death up to a session timeout later, and as long again for the rebalance.
   */
  private long catchUpMillis() {
    return 2L * config.kafka().sessionTimeoutMillis() + config.kafka().deliveryTimeoutMillis()
        + config.intake().requestDeadlineMillis();
  }

  /**
   * Puts the timers of the unpaid orders created after {@code afterId} in the shards {@code kept} into the wheel,
   * replacing those it holds (as a reload does); tried again every second while the database is away and this node
   * still owns any of the shards by the gain it had them by ({@code gainedIn}, indexed by shard). Until then, their
   * sweep is the net.
   */
  private void catchUpUntilDone(int[] kept, long[] gainedIn, long afterId) {
    long started = System.nanoTime();
    catchUp(kept, gainedIn, afterId, 0).onComplete(done -> {
      if (done.succeeded()) {
        log.info("read again the timers of {} unpaid orders created in the last {} ms in the {} shards this node kept, "
            + "in {} ms: a node that left may not have sent them", done.result(), catchUpMillis(), kept.length,
            (System.nanoTime() - started) / 1_000_000);
        stats.timersCaughtUp(done.result());
        return;
      }
      int[] stillOwned = Arrays.stream(kept).filter(shard -> owned.ownsSince(shard, gainedIn[shard])).toArray();
      if (stillOwned.length > 0) {
        log.warn("reading again the recent orders of the kept shards failed ({}); trying again in 1 s",
            done.cause().toString());
        vertx.setTimer(1000, id -> catchUpUntilDone(stillOwned, gainedIn, afterId));
      }
    });
  }

  private Future<Integer> catchUp(int[] kept, long[] gainedIn, long afterId, int found) {
    int pageSize = config.timer().reloadPageSize();
    return store.recentPendingPage(kept, afterId, pageSize).compose(page -> {
      schedule(page.deadlines(), true, ownedSince(kept, shard -> gainedIn[shard]));
      int total = found + page.deadlines().size();
      return page.deadlines().size() < pageSize
          ? Future.succeededFuture(total)
          : catchUp(kept, gainedIn, page.lastId(), total);
    });
  }

  /**
   * A load that fails (the database away) is tried again every second, for the shards this node still owns by that
   * gain: one lost and gained again meanwhile is the load of the later gain's.
   */
  private Future<Void> reloadUntilLoaded(int[] shards, long gain) {
    return reload(shards, gain, true).recover(failure -> {
      int[] stillOwned = Arrays.stream(shards).filter(shard -> owned.ownsSince(shard, gain)).toArray();
      if (stillOwned.length == 0) {
        return Future.succeededFuture();
      }
      log.warn("loading shards {} failed ({}); the node is not ready until they are loaded, trying again in 1 s",
          Arrays.toString(stillOwned), failure.toString());
      Promise<Void> retried = Promise.promise();
      vertx.setTimer(1000, id -> reloadUntilLoaded(stillOwned, gain).onComplete(retried));
      return retried.future();
    });
  }

  /**
   * Drops the timers of the shards this node lost. When the group gave them away before this node heard
   * ({@link Revocation#lost()}), their new owners loaded them from the database while this node may still have taken
   * new orders on them, whose timers are only here: the reply holds every timer taken out, for the fan-out to send to
   * their shards' partitions (decision 0025, amended).
   */
  private void onRevoked(Message<Revocation> message) {
    int shardCount = config.database().shards();
    int[] lost = message.body().shards();
    boolean[] isLost = new boolean[shardCount];
    for (int shard : lost) {
      isLost[shard] = true;
    }
    LongPredicate ofLostShard = id -> isLost[OrderIds.shardOf(id, shardCount)];
    Deadlines held = Deadlines.EMPTY;
    int removed;
    if (message.body().lost()) {
      HeldTimers timers = new HeldTimers();
      removed = wheel.removeWhere(ofLostShard, timers::add);
      held = timers.deadlines();
    } else {
      removed = wheel.cancelWhere(ofLostShard);
    }
    stats.timersClearedFor(lost);
    log.info("dropped {} timers of the {} shards this node lost{}: {}", removed, lost.length,
        message.body().lost() ? " (the group gave them away before this node heard; they go to their new owners)" : "",
        Arrays.toString(lost));
    message.reply(held);
  }

  /**
   * At the group's first assignment: the timers kept for shards other nodes own now (every timer this node handed out
   * before, for as long as it had no broker, decision 0051) go to their owners through Kafka, as those of shards lost
   * before this node heard do: here only, they would be in no wheel once this node is drained or dies, and their
   * owner's catch-up reads back only the last seconds (its sweep would close them, late). They stay in this wheel too,
   * so that a hand-over whose sends fail (a producer just made, a broker just back) leaves them firing here on time;
   * this node and the owner closing the same order is one compare-and-set that wins.
   */
  private void handOverKept() {
    int shardCount = config.database().shards();
    HeldTimers timers = new HeldTimers();
    int copied = wheel.removeWhere(id -> !owned.owns(OrderIds.shardOf(id, shardCount)), timers::add);
    timers.putBackInto(wheel);
    int[] others = IntStream.range(0, shardCount).filter(shard -> !owned.owns(shard)).toArray();
    if (others.length == 0) {
      return;
    }
    if (copied > 0) {
      log.info("the {} timers kept here before the group's first assignment for shards other nodes own go to their "
          + "owners too", copied);
    }
    vertx.eventBus().send(Addresses.SHARDS_HANDED_OVER, new Revocation(others, true, timers.deadlines()));
  }

  /** Timers taken out of the wheel, one per line (the other kind {@link Deadlines#NONE}), in growing arrays. */
  private static final class HeldTimers {
    private long[] ids = new long[1024];
    private long[] closeAt = new long[1024];
    private long[] remindAt = new long[1024];
    private int size;

    void add(long orderId, byte kind, long dueMillis) {
      if (size == ids.length) {
        ids = Arrays.copyOf(ids, 2 * size);
        closeAt = Arrays.copyOf(closeAt, 2 * size);
        remindAt = Arrays.copyOf(remindAt, 2 * size);
      }
      ids[size] = orderId;
      closeAt[size] = kind == TimeWheel.CLOSE ? dueMillis : Deadlines.NONE;
      remindAt[size] = kind == TimeWheel.REMIND ? dueMillis : Deadlines.NONE;
      size++;
    }

    /** Schedules every timer held here again in {@code wheel}. */
    void putBackInto(TimeWheel wheel) {
      for (int i = 0; i < size; i++) {
        if (closeAt[i] != Deadlines.NONE) {
          wheel.schedule(ids[i], closeAt[i], TimeWheel.CLOSE);
        }
        if (remindAt[i] != Deadlines.NONE) {
          wheel.schedule(ids[i], remindAt[i], TimeWheel.REMIND);
        }
      }
    }

    Deadlines deadlines() {
      return new Deadlines(Arrays.copyOf(ids, size), Arrays.copyOf(closeAt, size), Arrays.copyOf(remindAt, size));
    }
  }

  /**
   * Reads the pending deadlines, then the unsent reminders, then the holds of started payments, of the given shards
   * in keyset pages, {@value #PARALLEL_RELOADS} shards at a time, and puts them into the wheel only when all are read,
   * so that none of those shards fires before it is complete. A hold replaces the close timer its deadline gave.
   * Only the shards this node still owns by {@code gain} get their timers, and count as loaded
   * ({@link OwnedShards#markLoaded}).
   */
  private Future<Void> reload(int[] shards, long gain, boolean replaceExisting) {
    long started = System.nanoTime();
    List<Deadlines> pages = new ArrayList<>();
    List<Deadlines> holds = new ArrayList<>();
    List<Future<Void>> lanes = new ArrayList<>();
    for (int lane = 0; lane < PARALLEL_RELOADS; lane++) {
      lanes.add(reloadShardsFrom(shards, lane, pages, holds));
    }
    return Future.all(lanes)
        .map(done -> {
          int before = wheel.pending();
          IntPredicate ofThisGain = ownedSince(shards, shard -> gain);
          for (Deadlines page : pages) {
            // the database's copy replaces what came through Kafka meanwhile
            schedule(page, replaceExisting, ofThisGain);
          }
          for (Deadlines page : holds) {
            schedule(page, true, ofThisGain);
          }
          owned.markLoaded(shards, gain);
          long millis = (System.nanoTime() - started) / 1_000_000;
          if (shards.length > 0) {
            stats.shardsReloaded(millis);
            log.info("wheel loaded: {} timers of {} shards in {} ms ({} pending in all)",
                wheel.pending() - before, shards.length, millis, wheel.pending());
          }
          return null;
        });
  }

  /** Reloads shards[lane], shards[lane + PARALLEL_RELOADS], ... one after another. */
  private Future<Void> reloadShardsFrom(int[] shards, int index, List<Deadlines> pages, List<Deadlines> holds) {
    if (index >= shards.length) {
      return Future.succeededFuture();
    }
    int shard = shards[index];
    return reloadPages(shard, PageCursor.START, store::pendingDeadlinesPage, pages)
        .compose(deadlines -> reloadPages(shard, PageCursor.START, store::pendingRemindersPage, pages))
        .compose(reminders -> reloadPages(shard, PageCursor.START, store::pendingHoldsPage, holds))
        .compose(done -> reloadShardsFrom(shards, index + PARALLEL_RELOADS, pages, holds));
  }

  private interface PageQuery {
    Future<PendingPage> page(int shard, PageCursor after, int limit);
  }

  private Future<Void> reloadPages(int shard, PageCursor after, PageQuery query, List<Deadlines> pages) {
    int pageSize = config.timer().reloadPageSize();
    return query.page(shard, after, pageSize).compose(page -> {
      pages.add(page.deadlines());
      return page.deadlines().size() < pageSize ? Future.succeededFuture() : reloadPages(shard, page.next(), query, pages);
    });
  }

  /**
   * Which of a load's {@code shards} may have the timers it read: those this node owns by the gain it read them for,
   * asked as they go in (not per timer). A load of an earlier gain, still reading when the shard was lost and gained
   * again, may hold deadlines older than those the later gain's load or Kafka put into the wheel since.
   */
  private IntPredicate ownedSince(int[] shards, IntToLongFunction gainOf) {
    boolean[] owns = new boolean[config.database().shards()];
    for (int shard : shards) {
      owns[shard] = owned.ownsSince(shard, gainOf.applyAsLong(shard));
    }
    return shard -> owns[shard];
  }

  /** Timers that came in a message: those of the shards this node owns now. */
  private void schedule(Deadlines deadlines, boolean replaceExisting) {
    schedule(deadlines, replaceExisting, owned::owns);
  }

  /**
   * {@code replaceExisting}: for timers that can arrive twice (through Kafka, straight from this node,
   * from a reload), each kind given replaces the order's timer of that kind; a kind not given
   * ({@link Deadlines#NONE}) leaves the order's timer of that kind alone. A timer of a shard not
   * {@code ofOwnedShard} is ignored.
   */
  private void schedule(Deadlines deadlines, boolean replaceExisting, IntPredicate ofOwnedShard) {
    int shards = config.database().shards();
    for (int i = 0; i < deadlines.size(); i++) {
      long id = deadlines.orderIds()[i];
      int shard = OrderIds.shardOf(id, shards);
      if (!ofOwnedShard.test(shard)) {
        continue;
      }
      int added = 0;
      if (deadlines.closeAtMillis()[i] != Deadlines.NONE) {
        added += (replaceExisting ? -wheel.cancel(id, TimeWheel.CLOSE) : 0) + 1;
        wheel.schedule(id, deadlines.closeAtMillis()[i], TimeWheel.CLOSE);
      }
      if (deadlines.remindAtMillis()[i] != Deadlines.NONE) {
        added += (replaceExisting ? -wheel.cancel(id, TimeWheel.REMIND) : 0) + 1;
        wheel.schedule(id, deadlines.remindAtMillis()[i], TimeWheel.REMIND);
      }
      stats.timersAdded(shard, added);
    }
  }

  private void cancel(CancelTimers cancel) {
    int shards = config.database().shards();
    for (long id : cancel.orderIds()) {
      int removed = wheel.cancel(id);
      if (removed > 0) {
        stats.timersRemoved(OrderIds.shardOf(id, shards), removed);
      }
    }
  }

  private void fireDue() {
    int shards = config.database().shards();
    EventBus bus = vertx.eventBus();
    wheel.advance(clock.millis(), config.timer().batchSize(), (kind, ids, count) -> {
      long[] batch = Arrays.copyOf(ids, count);
      for (long id : batch) {
        stats.timersRemoved(OrderIds.shardOf(id, shards), 1);
      }
      String address = kind == TimeWheel.CLOSE ? Addresses.CLOSE_DUE : Addresses.REMIND_DUE;
      bus.send(address, new DueOrders(batch, DueOrders.Path.WHEEL));
    });
  }
}
