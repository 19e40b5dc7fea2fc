package ordertimeout.sweep;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.Meters;
import ordertimeout.metrics.NodeStats;
import ordertimeout.store.DeadlineStore.OverduePage;
import ordertimeout.store.DeadlineStore.OverdueShards;
import ordertimeout.store.DeadlineStore.PageCursor;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.Pools;
import ordertimeout.timer.OwnedShards;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;

/**
 * The compensation sweep: every {@code sweep.intervalSeconds}, finds the owned shards with unpaid orders overdue by
 * more than {@code sweep.graceSeconds} (one statement), pages through those orders and feeds them to the same
 * close path as the wheel, then likewise the reminders not sent in time (a timer message lost on its
 * way to the shard's owner loses neither the close nor the reminder). On a healthy node it finds almost nothing; what it closes is counted as
 * timeout closes on the sweep path. Parked orders are not paged (the parked gauge and alarm show them). Each pass is
 * metered: {@value Meters#SWEEP_RUNS} (runs, duration), {@value Meters#SWEEP_FOUND} (found), {@value Meters#SWEEP_CATCHES}
 * (closed).
 *
 * <p>In a cluster a pass then covers, the same way, the shards that no node with a live lease claims (decision 0050):
 * shard ownership lives in the Kafka group, so while the broker is away the shards of a node that dies have no owner,
 * but its lease runs out in PostgreSQL. A shard counts as unclaimed only once every look (one each tick) has found
 * it so for {@code sweep.unclaimedGraceSeconds}: a group that is settling (a cluster's start, a rebalance) leaves
 * shards unclaimed for seconds, and every node sweeping them then would work the same backlog at once. Their orders
 * are taken once overdue by more than {@code sweep.unclaimedGraceSeconds}; while every shard is claimed this costs one
 * small query a tick.
 */
public final class SweepVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(SweepVerticle.class);
  private static final DeliveryOptions CLOSE_REQUEST = new DeliveryOptions().setSendTimeout(120_000);
  /** A backlog that lasts is no reason to stop looking for lost deadlines: a pass runs after this many skipped. */
  private static final int MAX_PASSES_SKIPPED_IN_A_ROW = 12;
  private static final long LOOK_FAILURES_LOGGED_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final OwnedShards owned;
  private final NodeStats stats;
  private DeadlineStore store;
  private long sweepTimer = -1;
  private boolean sweeping;
  private int skippedInARow;
  private boolean stopped;
  private final UnclaimedStreaks unclaimedStreaks;
  private boolean lookingForUnclaimed;
  /** The shards found unclaimed, and not owned here, by every look for the lasting time: those a pass sweeps. */
  private int[] unclaimedLasting = new int[0];
  /** {@link #unclaimedLasting} as last logged. */
  private int[] unclaimedLogged = new int[0];
  /** -1 until a failed look has been logged. */
  private long lookFailuresNotLogged = -1;
  private long lookFailureLoggedAt;

  public SweepVerticle(AppConfig config, PgConnectOptions connectOptions, OwnedShards owned, NodeStats stats) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.owned = owned;
    this.stats = stats;
    this.unclaimedStreaks = new UnclaimedStreaks(config.database().shards(),
        TimeUnit.SECONDS.toNanos(config.sweep().unclaimedGraceSeconds()));
  }

  /** What one pass found: overdue closes and late reminders; and whether it stopped early for close batches queued. */
  private static final class Found {
    /** False for the pass that runs after {@value SweepVerticle#MAX_PASSES_SKIPPED_IN_A_ROW} left out: it goes through. */
    final boolean mayStopForQueue;
    long closes;
    long reminders;
    boolean stoppedForQueue;

    Found(boolean mayStopForQueue) {
      this.mayStopForQueue = mayStopForQueue;
    }
  }

  @Override
  public Future<?> start() {
    store = new DeadlineStore(Pools.shared(vertx, Pools.DEADLINES, connectOptions, config.database().poolSize(), 1,
        config.database().deadlines()), config.node().wallClock());
    sweepTimer = vertx.setPeriodic(config.sweep().intervalSeconds() * 1000L, id -> sweepOnce());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(sweepTimer);
    return Future.succeededFuture();
  }

  /**
   * One pass over every owned shard; a pass still running when the next is due makes that one skip. So do close batches
   * queued on this node (a deadline storm): a page handed now would wait behind them, and the orders it holds are
   * mostly in them already. In a million-order storm such a page waited past its 120 s request timeout. A pass that
   * meets such a queue before a page stops there and counts as left out too; one that started slower than the queue
   * formed would otherwise hand its next pages to it. Only a pass that reached its end (or failed) resets the count:
   * were every pass that starts to reset it, a queue that forms during each pass and is gone at each tick would stop
   * every pass in the first shards, and an order lost in a later shard would wait as long as that went on.
   *
   * <p>The bound: once an order is overdue by {@code sweep.graceSeconds}, at most
   * {@value #MAX_PASSES_SKIPPED_IN_A_ROW} ticks in a row are left out (skipped, or their pass stopped); the next one
   * begins a pass that goes through, and any pass begun since that reaches its end has handed the order over too. So
   * the sweep hands it over by its deadline + grace + ({@value #MAX_PASSES_SKIPPED_IN_A_ROW} + 1) x
   * {@code sweep.intervalSeconds}, plus how long the passes between ran past their ticks and that pass takes to reach
   * the order's shard. Through batches still queued when it begins, that pass takes only what was overdue before the
   * oldest of them ({@link #graceSeconds()}): an order due since waits until the batches queued before its deadline
   * have run, or for the first pass after the queue. The shards no live lease claims come after the owned ones in the
   * same pass and under the same bound, with {@code sweep.unclaimedGraceSeconds} for the grace, not lengthened by the
   * queue: their orders are in no wheel here, so not in the batches queued. Which shards those are is looked at each
   * tick, whether the pass runs or not, so that a storm's passes left out do not join two moments unclaimed into one.
   */
  private void sweepOnce() {
    Future<Void> lookedForUnclaimed = config.kafka().enabled() ? lookForUnclaimed() : Future.succeededFuture();
    if (sweeping) {
      return;
    }
    if (stats.closeQueued() > 0 && skippedInARow < MAX_PASSES_SKIPPED_IN_A_ROW) {
      skippedInARow++;
      stats.sweepSkipped();
      return;
    }
    boolean forced = skippedInARow >= MAX_PASSES_SKIPPED_IN_A_ROW;
    sweeping = true;
    long started = System.nanoTime();
    Found found = new Found(!forced);
    int graceSeconds = graceSeconds();
    store.shardsWithOverdue(owned.list(), graceSeconds)
        .compose(overdue -> sweepShardsFrom(0, 0, overdue, owned::owns, graceSeconds, found))
        .compose(closed -> config.kafka().enabled()
            ? lookedForUnclaimed.compose(looked -> sweepUnclaimed(found))
                .map(closedUnclaimed -> closed + closedUnclaimed)
            : Future.succeededFuture(closed))
        .onFailure(failure -> log.warn("sweep pass failed, the next pass retries it: {}", failure.toString()))
        .onSuccess(closed -> {
          if (closed > 0) {
            log.info("sweep closed {} overdue orders the wheel had not closed", closed);
          }
        })
        .onComplete(done -> {
          sweeping = false;
          stats.swept(System.nanoTime() - started, found.closes, found.reminders);
          if (found.stoppedForQueue) {
            skippedInARow++;
            stats.sweepSkipped();
          } else {
            // a failed pass too: were a forced pass's failure (a statement timeout in a storm) to keep the count,
            // every later tick would force a whole pass beside the close batches until one got through
            skippedInARow = 0;
          }
        });
  }

  /**
   * {@code sweep.graceSeconds}, plus, while close batches queue here, how long the oldest of them has waited: the wheel
   * hands every order to the queue when it falls due, so an order due since then is most likely still in it, and the
   * closes have not yet passed by it. Only what was overdue before the oldest batch queued is the sweep's. In a
   * million-order storm a pass through the backlog (one every {@value #MAX_PASSES_SKIPPED_IN_A_ROW} left out) looked
   * for the storm's own orders behind the hundreds of thousands just closed, whose entries were still in the index of
   * unpaid orders: its statement ran for 22 s (2026-12-05).
   */
  private int graceSeconds() {
    long queuedFor = stats.closeQueuedForMillis(config.node().wallClock().millis());
    return (int) Math.min(Integer.MAX_VALUE, config.sweep().graceSeconds() + (queuedFor + 999) / 1000);
  }

  /**
   * Which shards no live lease claims and this node does not own, and which of them every look has found so for
   * {@code sweep.unclaimedGraceSeconds}. A look that fails changes nothing, as one skipped: were it to start every
   * streak again, a database that fails a look now and then (a flapping proxy) would keep a dead node's shards from
   * ever being swept. Completes when the look is done, failed or not (at once when the last one is still running), so
   * that the tick's pass sweeps what this look found.
   */
  private Future<Void> lookForUnclaimed() {
    if (lookingForUnclaimed || stopped) {
      return Future.succeededFuture();
    }
    lookingForUnclaimed = true;
    long sentAt = System.nanoTime();
    return store.unclaimedShards(config.database().shards())
        .onSuccess(unclaimed -> {
          int[] notOwned = Arrays.stream(unclaimed).filter(shard -> !owned.owns(shard)).toArray();
          unclaimedLasting = unclaimedStreaks.lookedAndFound(notOwned, sentAt, System.nanoTime());
          logWhenChanged(unclaimedLasting);
        })
        .onFailure(this::lookFailed)
        .onComplete(done -> lookingForUnclaimed = false)
        .<Void>mapEmpty()
        .otherwiseEmpty();
  }

  /** Logged at most once every {@link #LOOK_FAILURES_LOGGED_EVERY_NANOS}: a flapping database fails a look a tick. */
  private void lookFailed(Throwable failure) {
    long now = System.nanoTime();
    if (lookFailuresNotLogged >= 0 && now - lookFailureLoggedAt < LOOK_FAILURES_LOGGED_EVERY_NANOS) {
      lookFailuresNotLogged++;
      return;
    }
    log.warn("could not look for unclaimed shards ({} more such failures not logged since the last), the shards "
        + "found so far kept: {}", Math.max(lookFailuresNotLogged, 0), failure.toString());
    lookFailureLoggedAt = now;
    lookFailuresNotLogged = 0;
  }

  /**
   * The shards unclaimed for long enough that this node does not own, swept as the owned ones are but with
   * {@code sweep.unclaimedGraceSeconds}, reminders included. Every other node sweeps the same shards meanwhile: each
   * close (and reminder) is a compare-and-set in PostgreSQL, so each order still closes once.
   */
  private Future<Integer> sweepUnclaimed(Found found) {
    int[] notOwned = Arrays.stream(unclaimedLasting).filter(shard -> !owned.owns(shard)).toArray();
    if (stopped || found.stoppedForQueue || notOwned.length == 0) {
      return Future.succeededFuture(0);
    }
    int graceSeconds = config.sweep().unclaimedGraceSeconds();
    return store.shardsWithOverdue(notOwned, graceSeconds)
        .compose(overdue -> sweepShardsFrom(0, 0, overdue, shard -> !owned.owns(shard), graceSeconds, found));
  }

  private void logWhenChanged(int[] unclaimed) {
    if (Arrays.equals(unclaimed, unclaimedLogged)) {
      return;
    }
    if (unclaimed.length > 0) {
      int graceSeconds = config.sweep().unclaimedGraceSeconds();
      log.warn("shards {} have been claimed by no live node's lease for {} s or more: this node's sweep covers them "
          + "too, closing their orders overdue by more than {} s", Arrays.toString(unclaimed), graceSeconds,
          graceSeconds);
    } else {
      log.info("no shard has been left unclaimed for long any more: this node's sweep covers only its own");
    }
    unclaimedLogged = unclaimed;
  }

  /**
   * Pages through the shards {@code overdue} names, from {@code shard} on, that are still {@code sweptHere}: each one's
   * closes, then its reminders, of orders overdue by more than {@code graceSeconds}.
   */
  private Future<Integer> sweepShardsFrom(int shard, int closedSoFar, OverdueShards overdue, IntPredicate sweptHere,
                                          int graceSeconds, Found found) {
    if (shard >= config.database().shards() || stopped || found.stoppedForQueue) {
      return Future.succeededFuture(closedSoFar);
    }
    boolean closes = overdue.closes().contains(shard);
    boolean reminders = overdue.reminders().contains(shard);
    // owned (or not) when the pass began, maybe not any more
    if (!sweptHere.test(shard) || !closes && !reminders) {
      return sweepShardsFrom(shard + 1, closedSoFar, overdue, sweptHere, graceSeconds, found);
    }
    return (closes
            ? sweepShard(shard, PageCursor.START, 0, store::overduePage, Addresses.CLOSE_DUE, graceSeconds, found)
            : Future.succeededFuture(0))
        .compose(closed -> (reminders
            ? sweepShard(shard, PageCursor.START, 0, store::overdueRemindersPage, Addresses.REMIND_DUE, graceSeconds,
                found)
            : Future.succeededFuture(0))
            .map(reminded -> closed))
        .recover(failure -> {
          log.warn("sweep of shard {} failed, the next pass retries it: {}", shard, failure.toString());
          return Future.succeededFuture(0);
        })
        .compose(closed -> sweepShardsFrom(shard + 1, closedSoFar + closed, overdue, sweptHere, graceSeconds, found));
  }

  private interface OverdueQuery {
    Future<OverduePage> page(int shard, int graceSeconds, PageCursor after, int limit);
  }

  /** Hands every page of the query's overdue orders of one shard to {@code address}; returns how many it handled. */
  private Future<Integer> sweepShard(int shard, PageCursor after, int handledSoFar, OverdueQuery query, String address,
                                     int graceSeconds, Found found) {
    if (found.mayStopForQueue && stats.closeQueued() > 0) {
      found.stoppedForQueue = true;
      return Future.succeededFuture(handledSoFar);
    }
    int pageSize = config.sweep().pageSize();
    return query.page(shard, graceSeconds, after, pageSize).compose(page -> {
      if (page.ids().length == 0) {
        return Future.succeededFuture(handledSoFar);
      }
      if (address.equals(Addresses.CLOSE_DUE)) {
        found.closes += page.ids().length;
      } else {
        found.reminders += page.ids().length;
      }
      return vertx.eventBus()
          .<Integer>request(address, new DueOrders(page.ids(), DueOrders.Path.SWEEP), CLOSE_REQUEST)
          .map(reply -> reply.body())
          .recover(failure -> {
            log.warn("sweep could not hand a page of shard {} to {}, going on past it: {}", shard, address, failure.toString());
            return Future.succeededFuture(0);
          })
          .compose(handled -> page.ids().length < pageSize
              ? Future.succeededFuture(handledSoFar + handled)
              : sweepShard(shard, page.next(), handledSoFar + handled, query, address, graceSeconds, found));
    });
  }
}
