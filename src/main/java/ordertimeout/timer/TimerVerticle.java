package ordertimeout.timer;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.DueOrders;
import ordertimeout.config.AppConfig;
import ordertimeout.order.Deadlines;
import ordertimeout.order.OrderIds;
import ordertimeout.stats.ServiceStats;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.DeadlineStore.PageCursor;
import ordertimeout.store.DeadlineStore.PendingPage;
import ordertimeout.store.Pools;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Owns the time wheel of this node's shards (on one node: all of them). Reloads every pending
 * deadline and reminder from PostgreSQL before it takes new ones, then every tick hands the due
 * order ids to the close verticle in batches.
 */
public final class TimerVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(TimerVerticle.class);
  private static final int PARALLEL_RELOADS = 4;

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final ServiceStats stats;
  private TimeWheel wheel;
  private DeadlineStore store;
  private long tickTimer = -1;

  public TimerVerticle(AppConfig config, PgConnectOptions connectOptions, ServiceStats stats) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
  }

  @Override
  public Future<?> start() {
    store = new DeadlineStore(Pools.shared(vertx, Pools.DEADLINES, connectOptions, config.database().poolSize(), 1));
    wheel = new TimeWheel(config.timer().tickMillis(), System.currentTimeMillis(), 1 << 16);
    EventBus bus = vertx.eventBus();
    return reloadAllShards()
        .compose(loaded -> Future.join(
            bus.<Deadlines>consumer(Addresses.TIMER_SCHEDULE, message -> schedule(message.body())).completion(),
            bus.<CancelTimers>consumer(Addresses.TIMER_CANCEL, message -> cancel(message.body())).completion()))
        .onSuccess(ready -> tickTimer = vertx.setPeriodic(config.timer().tickMillis(), id -> fireDue()));
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(tickTimer);
    wheel.clear();
    stats.timersCleared();
    stats.wheelUnloaded();
    return Future.succeededFuture();
  }

  private Future<Void> reloadAllShards() {
    long started = System.nanoTime();
    List<Future<Void>> lanes = new ArrayList<>();
    for (int lane = 0; lane < PARALLEL_RELOADS; lane++) {
      lanes.add(reloadShardsFrom(lane));
    }
    return Future.all(lanes).map(done -> {
      long millis = (System.nanoTime() - started) / 1_000_000;
      stats.wheelLoaded(millis);
      log.info("wheel loaded: {} pending timers of {} shards in {} ms", wheel.pending(), config.database().shards(), millis);
      return null;
    });
  }

  /** Reloads shards lane, lane + PARALLEL_RELOADS, ... one after another. */
  private Future<Void> reloadShardsFrom(int shard) {
    if (shard >= config.database().shards()) {
      return Future.succeededFuture();
    }
    return reloadShard(shard).compose(done -> reloadShardsFrom(shard + PARALLEL_RELOADS));
  }

  private Future<Void> reloadShard(int shard) {
    return reloadPages(shard, PageCursor.START, store::pendingDeadlinesPage)
        .compose(deadlines -> reloadPages(shard, PageCursor.START, store::pendingRemindersPage));
  }

  private interface PageQuery {
    Future<PendingPage> page(int shard, PageCursor after, int limit);
  }

  private Future<Void> reloadPages(int shard, PageCursor after, PageQuery query) {
    int pageSize = config.timer().reloadPageSize();
    return query.page(shard, after, pageSize).compose(page -> {
      schedule(page.deadlines());
      return page.deadlines().size() < pageSize ? Future.succeededFuture() : reloadPages(shard, page.next(), query);
    });
  }

  private void schedule(Deadlines deadlines) {
    int shards = config.database().shards();
    for (int i = 0; i < deadlines.size(); i++) {
      long id = deadlines.orderIds()[i];
      int added = 0;
      if (deadlines.closeAtMillis()[i] != Deadlines.NONE) {
        wheel.schedule(id, deadlines.closeAtMillis()[i], TimeWheel.CLOSE);
        added++;
      }
      if (deadlines.remindAtMillis()[i] != Deadlines.NONE) {
        wheel.schedule(id, deadlines.remindAtMillis()[i], TimeWheel.REMIND);
        added++;
      }
      stats.timersAdded(OrderIds.shardOf(id, shards), added);
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
    wheel.advance(System.currentTimeMillis(), config.timer().batchSize(), (kind, ids, count) -> {
      long[] batch = Arrays.copyOf(ids, count);
      for (long id : batch) {
        stats.timersRemoved(OrderIds.shardOf(id, shards), 1);
      }
      String address = kind == TimeWheel.CLOSE ? Addresses.CLOSE_DUE : Addresses.REMIND_DUE;
      bus.send(address, new DueOrders(batch, DueOrders.Path.WHEEL));
    });
  }
}
