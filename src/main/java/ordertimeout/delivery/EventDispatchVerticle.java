package ordertimeout.delivery;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.store.EventStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives committed events their feed position (commit order) and a webhook delivery per webhook that wants them,
 * every {@code events.dispatchIntervalMillis} (at once again after a full batch). Runs on every node; one node's
 * transaction at a time does the work (an advisory lock), the others find it taken and wait for the next turn.
 * While this node's close batches wait over {@code events.dispatchWhileClosesWaitMillis} for a place (a deadline
 * storm), it takes one batch that often at most, so that the closes get the database first; the events it leaves
 * wait in their queue (decision 0052). See docs/decisions/0020-event-feed-order.md.
 */
public final class EventDispatchVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(EventDispatchVerticle.class);
  private static final long MAX_BACKOFF_MILLIS = 5_000;

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private EventStore store;
  private long timer = -1;
  private long backoffMillis;
  private boolean yieldingToCloses;
  private boolean stopped;
  private Future<Integer> current = Future.succeededFuture(0);

  /** {@code stats}: how long this node's close batches have waited for a place. */
  public EventDispatchVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
  }

  @Override
  public Future<?> start() {
    store = EventStore.shared(vertx, connectOptions, config.database().background());
    later(0);
    return Future.succeededFuture();
  }

  /** Lets the transaction under way end (it is short) before the pool closes. */
  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(timer);
    return current.otherwiseEmpty();
  }

  private void later(long delayMillis) {
    if (!stopped) {
      timer = vertx.setTimer(Math.max(1, delayMillis), id -> dispatch());
    }
  }

  private boolean closesWaitLong(AppConfig.Events events) {
    long waitedMillis = stats.closeQueuedForMillis(config.node().wallClock().millis());
    long yieldAfterMillis = events.dispatchWhileClosesWaitMillis();
    boolean yielding = yieldAfterMillis > 0 && waitedMillis > yieldAfterMillis;
    if (yielding != yieldingToCloses) {
      yieldingToCloses = yielding;
      if (yielding) {
        log.info("close batches have waited {} ms for a place: new events get their feed position one batch every {} "
            + "ms until the closes catch up", waitedMillis, yieldAfterMillis);
      } else {
        log.info("the closes caught up: new events get their feed position at the usual pace again");
      }
    }
    return yielding;
  }

  private void dispatch() {
    AppConfig.Events events = config.events();
    current = store.dispatch(events.batchSize(), events.webhooks());
    current
        .onSuccess(taken -> {
          if (backoffMillis > 0) {
            log.info("event dispatch works again");
            backoffMillis = 0;
          }
          long next = taken == events.batchSize() ? 0 : events.dispatchIntervalMillis();
          later(closesWaitLong(events) ? Math.max(next, events.dispatchWhileClosesWaitMillis()) : next);
        })
        .onFailure(failure -> {
          if (backoffMillis == 0) {
            log.warn("event dispatch failed ({}); new events wait for their feed position and webhooks, retrying with "
                + "backoff up to {} ms", failure.toString(), MAX_BACKOFF_MILLIS);
          }
          backoffMillis = Math.min(MAX_BACKOFF_MILLIS, Math.max(events.dispatchIntervalMillis(), backoffMillis * 2));
          later(backoffMillis);
        });
  }
}
