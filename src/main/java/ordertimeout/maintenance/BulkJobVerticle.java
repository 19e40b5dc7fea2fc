package ordertimeout.maintenance;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.CloseReason;
import ordertimeout.store.BulkJobStore;
import ordertimeout.store.BulkJobStore.Batch;
import ordertimeout.store.BulkJobStore.Job;
import ordertimeout.store.DeadlineExtension;
import ordertimeout.store.Pools;
import ordertimeout.store.StatusCache;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.UUID;

import static net.logstash.logback.argument.StructuredArguments.kv;

/**
 * Runs operators' bulk jobs (bulk_jobs), one at a time on this node, on whichever node claims them first: every
 * {@code bulkJobs.pollMillis} (and at once when a job is submitted here) an idle node claims the oldest job nobody holds,
 * under a lease in PostgreSQL that each batch renews. A node that stops gives its job back after the batch in flight;
 * one that dies leaves it to whoever claims it after the lease ran out. A job claimed {@code bulkJobs.maxAttempts} times
 * without finishing, or whose batch failed {@value #BATCH_ATTEMPTS} times in a row, is marked FAILED with its reason:
 * a job is either running, finished, or failed with what it did, never silently stuck.
 *
 * <p>Not the Redis {@link JobLock}: the lease lives next to the job's progress, so each batch commits under it (a node
 * whose lease was taken can commit nothing), and it works with Redis off.
 */
public final class BulkJobVerticle extends VerticleBase {
  /** A batch that fails this many times in a row fails the job (a deadlock or lock wait gets retried first). */
  static final int BATCH_ATTEMPTS = 3;
  private static final Logger log = LoggerFactory.getLogger(BulkJobVerticle.class);
  private static final String POOL = "order-timeout-bulk-jobs";

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final StatusCache statusCache;
  private final String owner;
  private BulkJobStore store;
  private long pollTimer = -1;
  private boolean busy;
  private boolean stopping;
  private Job running;
  private Promise<Void> idle;

  /** {@code statusCache}: forgets the orders of each batch. */
  public BulkJobVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, StatusCache statusCache) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.statusCache = statusCache;
    this.owner = "node-" + config.node().id() + "-" + UUID.randomUUID();
  }

  @Override
  public Future<?> start() {
    store = new BulkJobStore(Pools.shared(vertx, POOL, connectOptions, 1, 1, config.database().background()),
        DeadlineExtension.moveCloseAtWithin(config.orders().maxTimeoutSeconds()), statusCache);
    pollTimer = vertx.setPeriodic(config.bulkJobs().pollMillis(), id -> poll());
    return vertx.eventBus().localConsumer(Addresses.BULK_JOBS_WAKE, message -> poll()).completion();
  }

  /** After the batch in flight (if any) the job's lease is freed, so that the next node to look goes on with it. */
  @Override
  public Future<?> stop() {
    stopping = true;
    vertx.cancelTimer(pollTimer);
    if (!busy) {
      return Future.succeededFuture();
    }
    idle = Promise.promise();
    return idle.future();
  }

  private void poll() {
    if (busy || stopping) {
      return;
    }
    busy = true;
    AppConfig.BulkJobs settings = config.bulkJobs();
    store.claim(owner, leaseMillis(), settings.maxAttempts()).onComplete(claimed -> {
      if (claimed.failed()) {
        log.warn("could not look for bulk jobs, trying again at the next poll: {}", claimed.cause().toString());
        done();
      } else if (claimed.result().isEmpty()) {
        done();
      } else {
        running = claimed.result().get();
        log.info("bulk job claimed {} {} {} {}", kv("jobId", running.id()), kv("kind", running.kind()),
            kv("attempt", running.attempts()), kv("done", running.done()));
        nextBatch(1);
      }
    });
  }

  private void nextBatch(int attempt) {
    if (stopping) {
      store.release(running.id(), owner)
          .onComplete(released -> log.info("bulk job given back, the next node to look goes on with it {}", kv("jobId", running.id())))
          .onComplete(released -> done());
      return;
    }
    store.runBatch(running, owner, config.bulkJobs().batchSize(), leaseMillis()).onComplete(result -> {
      if (result.succeeded()) {
        Batch batch = result.result();
        timers(batch);
        if (batch.finished()) {
          log.info("bulk job finished {}", kv("jobId", running.id()));
          done();
        } else {
          vertx.setTimer(Math.max(1, config.bulkJobs().batchPauseMillis()), id -> nextBatch(1));
        }
      } else if (result.cause() instanceof BulkJobStore.LeaseLost) {
        log.warn("bulk job no longer held by this node, left to its holder {}", kv("jobId", running.id()));
        done();
      } else if (attempt < BATCH_ATTEMPTS && !stopping) {
        log.warn("bulk job batch failed, retrying {} {} {}", kv("jobId", running.id()), kv("attempt", attempt), kv("error", result.cause().toString()));
        vertx.setTimer(1000L * attempt, id -> nextBatch(attempt + 1));
      } else if (stopping) {
        nextBatch(attempt);
      } else {
        String error = "a batch failed " + BATCH_ATTEMPTS + " times: " + result.cause();
        log.error("bulk job failed {} {}", kv("jobId", running.id()), kv("error", error));
        store.fail(running.id(), owner, error)
            .onFailure(failure -> log.warn("could not mark bulk job {} failed ({}); its lease runs out and another claim fails it "
                + "after bulkJobs.maxAttempts", running.id(), failure.toString()))
            .onComplete(marked -> done());
      }
    });
  }

  /**
   * Closed orders count as admin closes in the node's stats; the wheel forgets them, and takes the extended ones' new
   * deadlines (the database decides either way).
   */
  private void timers(Batch batch) {
    if (batch.closed().length > 0) {
      stats.closedOnRequest(CloseReason.ADMIN, batch.closed().length);
      vertx.eventBus().send(Addresses.TIMER_CANCEL, new CancelTimers(batch.closed()));
    }
    if (batch.extended().size() > 0) {
      vertx.eventBus().send(Addresses.TIMER_MOVE, batch.extended());
    }
  }

  private void done() {
    busy = false;
    running = null;
    if (idle != null) {
      idle.tryComplete();
    }
  }

  private long leaseMillis() {
    return config.bulkJobs().leaseSeconds() * 1000L;
  }
}
