package ordertimeout.maintenance;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.redis.RedisHealth;
import ordertimeout.store.MaintenanceStore.Change;
import ordertimeout.store.MaintenanceStore.Check;
import ordertimeout.store.MaintenanceStore.ClientDifference;
import ordertimeout.store.MaintenanceStore.Difference;
import ordertimeout.store.MaintenanceStore;
import ordertimeout.store.Pools;
import ordertimeout.store.ReconciliationRuns;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Reconciliation: every day at {@code reconciliation.at} in {@code reconciliation.zone} (or, with {@code at} empty,
 * every {@code reconciliation.intervalHours}, first that long after start), and on POST /v1/admin/reconcile, checks
 * the stock invariant ({@code reserved} = sum of the quantities of the SKU's items in unpaid orders), that each
 * client's holdings (the counts behind its caps) are what its unpaid orders hold, counts the unpaid orders overdue by
 * more than the sweep's grace and interval (the sweep closes them; this only reports that it has not) and the parked
 * orders. Differences go to a WARN line each (the first {@value #LOGGED} of each kind), to the gauges of
 * {@link NodeStats} (SKUs), to the reply and to the run's row in reconciliation_runs, whose latest report
 * GET /v1/admin/reconciliation/latest answers. With repair, the reserved counts are set right in one transaction, the
 * holdings in one statement, and every change is logged. Runs one at a time on a node: a request while one runs
 * waits for it.
 * <p>
 * The daily run: each day's due instant is a slot ({@link DailySchedule}); a node runs a slot only after claiming it in
 * the database, so each slot runs once across the cluster and restarts, and a node starting after a slot that has no
 * run runs it at once. With Redis on, the nodes also take the job's {@link SingletonJob} lock around the claim. A
 * request runs on the node it reached, whatever the lock (an operator asked for it, and a check or repair running on
 * two nodes at once is safe: the repair is one transaction that locks the inventory rows in SKU order).
 */
public final class ReconciliationVerticle extends VerticleBase {
  public static final String JOB = "reconciliation";
  private static final Logger log = LoggerFactory.getLogger(ReconciliationVerticle.class);
  private static final int LOGGED = 100;
  private static final int LISTED = 1000;

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final RedisHealth redisHealth;
  /** With the daily schedule the lock only spans a claim and its run: the database's slot says what ran. */
  private static final long DAILY_LOCK_MILLIS = 60_000;

  private MaintenanceStore store;
  private ReconciliationRuns runs;
  private SingletonJob periodic;
  private long timer = -1;
  private boolean stopped;
  private Future<JsonObject> last = Future.succeededFuture();

  /** {@code redisHealth} is null when Redis is off: then every node runs the periodic reconciliation. */
  public ReconciliationVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, RedisHealth redisHealth) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.redisHealth = redisHealth;
  }

  @Override
  public Future<?> start() {
    store = MaintenanceStore.shared(vertx, connectOptions, config.database().background());
    runs = new ReconciliationRuns(Pools.shared(vertx, MaintenanceStore.POOL, connectOptions, MaintenanceStore.POOL_SIZE, 1,
        config.database().background()));
    AppConfig.Reconciliation schedule = config.reconciliation();
    if (schedule.daily()) {
      DailySchedule daily = new DailySchedule(schedule.at(), schedule.zone());
      periodic = SingletonJob.create(vertx, JOB, DAILY_LOCK_MILLIS, config.node().id(), redisHealth, stats.registry());
      vertx.runOnContext(now -> runDueSlot(daily));
    } else {
      long intervalMillis = schedule.intervalHours() * 3_600_000L;
      periodic = SingletonJob.create(vertx, JOB, intervalMillis, config.node().id(), redisHealth, stats.registry());
      timer = vertx.setPeriodic(intervalMillis, id -> periodic.runUnlessRunning(() -> reconcile(false, null))
          .onFailure(failure -> log.warn("reconciliation failed, the next run tries again: {}", failure.toString())));
    }
    return vertx.eventBus().<Boolean>consumer(Addresses.RECONCILE, this::onRequest).completion();
  }

  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(timer);
    return periodic == null ? Future.succeededFuture() : periodic.close();
  }

  /**
   * Runs the latest slot if no run has it (claiming it first), then sleeps until the next slot. A run of the slot that
   * never finished and started over {@link #staleSeconds} ago (its node died) does not count: the slot is claimed again
   * and the run taken over. A run of the slot still going on another node is looked at again a minute later, until it
   * finished or can be taken over; so is a slot whose lock or claim another node got first, and a failure to read or
   * claim. A failed run is not tried again (its slot is taken; the next slot runs).
   */
  private void runDueSlot(DailySchedule daily) {
    if (stopped) {
      return;
    }
    Instant now = Instant.ofEpochMilli(config.node().wallClock().millis());
    runs.lastRun(staleSeconds())
        .compose(last -> {
          Optional<Instant> due = daily.due(now, last == null ? null : last.slot());
          if (due.isPresent()) {
            return periodic.runUnlessRunning(() -> claimAndRun(due.get())).map(ran -> ran.orElse(false));
          }
          if (last.running()) {
            log.debug("the reconciliation of slot {} is still running elsewhere; looking again in a minute",
                last.slot());
          }
          return Future.succeededFuture(!last.running());
        })
        .onSuccess(settled -> {
          if (settled) {
            sleepUntilNextSlot(daily);
          } else {
            timer = vertx.setTimer(DAILY_LOCK_MILLIS, id -> runDueSlot(daily));
          }
        })
        .onFailure(failure -> {
          log.warn("the daily reconciliation could not run, trying again in a minute: {}", failure.toString());
          timer = vertx.setTimer(DAILY_LOCK_MILLIS, id -> runDueSlot(daily));
        });
  }

  /**
   * How long after its start a scheduled run that has not finished is taken over: twice the background statement
   * timeout (the check's two statements that read every unpaid order's items, one after the other) and a minute.
   */
  private int staleSeconds() {
    return 2 * config.database().background().statementTimeoutMillis() / 1000 + 60;
  }

  /** True when this node ran the slot, false when another node has it (SingletonJob wants a value: an Optional). */
  private Future<Boolean> claimAndRun(Instant slot) {
    return runs.claim(slot, config.node().id(), staleSeconds()).compose(id -> {
      if (id == null) {
        log.debug("the reconciliation of slot {} is another node's", slot);
        return Future.succeededFuture(false);
      }
      log.info("reconciliation of the slot {} starts", slot);
      return reconcile(false, id)
          .onFailure(failed -> log.warn("reconciliation of the slot {} failed; the next slot runs again: {}", slot, failed.toString()))
          .map(true)
          .recover(failed -> Future.succeededFuture(true));
    });
  }

  private void sleepUntilNextSlot(DailySchedule daily) {
    if (stopped) {
      return;
    }
    long nowMillis = config.node().wallClock().millis();
    Instant next = daily.nextSlot(Instant.ofEpochMilli(nowMillis));
    log.info("next daily reconciliation at {}", next);
    timer = vertx.setTimer(Math.max(1, next.toEpochMilli() - nowMillis), id -> runDueSlot(daily));
  }

  private void onRequest(Message<Boolean> request) {
    boolean repair = Boolean.TRUE.equals(request.body());
    runs.startRequested(config.node().id(), repair)
        .compose(id -> reconcile(repair, id))
        .onSuccess(request::reply)
        .onFailure(failure -> {
          log.warn("reconciliation failed: {}", failure.toString());
          request.fail(503, failure.toString());
        });
  }

  /**
   * Queued behind the run in progress, if any: two runs never overlap on this node. The outcome goes to the run's row
   * {@code runId} (none for the periodic runs of {@code intervalHours}); a report that could not be stored is logged.
   */
  private Future<JsonObject> reconcile(boolean repair, Long runId) {
    Future<JsonObject> next = last.transform(previous -> runOnce(repair));
    last = next;
    if (runId == null) {
      return next;
    }
    return next.transform(done -> {
      Future<Void> stored = done.succeeded() ? runs.finished(runId, done.result()) : runs.failed(runId, done.cause().toString());
      return stored
          .onFailure(failure -> log.warn("could not store the outcome of reconciliation run {}: {}", runId, failure.toString()))
          .transform(ignored -> done.succeeded() ? Future.succeededFuture(done.result()) : Future.<JsonObject>failedFuture(done.cause()));
    });
  }

  private Future<JsonObject> runOnce(boolean repair) {
    int overdueSeconds = config.sweep().graceSeconds() + config.sweep().intervalSeconds();
    return store.check(overdueSeconds, LISTED).compose(check -> {
      report(check, overdueSeconds);
      Future<List<Change>> repaired = repair && check.differencesTotal() > 0
          ? store.repairReserved()
          : Future.succeededFuture(List.of());
      Future<List<String>> repairedClients = repaired.compose(done -> repair && check.clientDifferencesTotal() > 0
          ? store.repairClientHoldings()
          : Future.succeededFuture(List.of()));
      return repairedClients.map(clients -> {
        for (Change change : repaired.result()) {
          log.warn("reconciliation repaired sku={} reserved from={} to={}", change.sku(), change.from(), change.to());
        }
        for (String client : clients) {
          log.warn("reconciliation repaired the holdings of client={}", client);
        }
        stats.reconciled(check.differencesTotal(), check.overdueUnpaid(), repaired.result().size());
        return toJson(check, repaired.result().size(), clients.size());
      });
    });
  }

  private static void report(Check check, int overdueSeconds) {
    List<Difference> differences = check.differences();
    for (int i = 0; i < Math.min(LOGGED, differences.size()); i++) {
      Difference difference = differences.get(i);
      log.warn("reconciliation: stock invariant broken sku={} reserved={} expected={} ({} of {} SKUs differing)",
          difference.sku(), difference.reserved(), difference.expected(), i + 1, check.differencesTotal());
    }
    if (check.differencesTotal() > LOGGED) {
      log.warn("reconciliation: {} more SKUs differ, not logged", check.differencesTotal() - LOGGED);
    }
    List<ClientDifference> clients = check.clientDifferences();
    for (int i = 0; i < Math.min(LOGGED, clients.size()); i++) {
      ClientDifference client = clients.get(i);
      log.warn("reconciliation: client holdings off client={} unpaid={} expected={} units={} expected={} ({} of {} clients differing)",
          client.client(), client.unpaid(), client.expectedUnpaid(), client.units(), client.expectedUnits(), i + 1,
          check.clientDifferencesTotal());
    }
    if (check.clientDifferencesTotal() > LOGGED) {
      log.warn("reconciliation: {} more clients differ, not logged", check.clientDifferencesTotal() - LOGGED);
    }
    if (check.overdueUnpaid() > 0) {
      log.warn("reconciliation: {} unpaid orders overdue by more than {} s, the oldest {} due at {}",
          check.overdueUnpaid(), overdueSeconds, check.oldestOverdue().id(), check.oldestOverdue().closeAt());
    }
    if (check.parkedOrders() > 0) {
      log.warn("reconciliation: {} unpaid orders parked after failed closes, see GET /v1/admin/orders/parked", check.parkedOrders());
    }
    log.info("reconciliation checked {} SKUs: {} differing, {} clients' holdings differing, {} unpaid orders overdue, {} parked",
        check.skusChecked(), check.differencesTotal(), check.clientDifferencesTotal(), check.overdueUnpaid(), check.parkedOrders());
  }

  private static JsonObject toJson(Check check, int repaired, int repairedClients) {
    JsonArray differences = new JsonArray();
    for (Difference difference : check.differences()) {
      differences.add(new JsonObject()
          .put("sku", difference.sku())
          .put("reserved", difference.reserved())
          .put("expected", difference.expected()));
    }
    JsonArray clientDifferences = new JsonArray();
    for (ClientDifference client : check.clientDifferences()) {
      clientDifferences.add(new JsonObject()
          .put("client", client.client())
          .put("unpaid", client.unpaid())
          .put("units", client.units())
          .put("expectedUnpaid", client.expectedUnpaid())
          .put("expectedUnits", client.expectedUnits()));
    }
    JsonObject oldest = check.oldestOverdue() == null ? null : new JsonObject()
        .put("id", Long.toString(check.oldestOverdue().id()))
        .put("closeAt", check.oldestOverdue().closeAt().toString());
    return new JsonObject()
        .put("checkedAt", check.checkedAt().toString())
        .put("skusChecked", check.skusChecked())
        .put("skuDifferences", differences)
        .put("skuDifferencesTotal", check.differencesTotal())
        .put("clientDifferences", clientDifferences)
        .put("clientDifferencesTotal", check.clientDifferencesTotal())
        .put("overdueUnpaid", check.overdueUnpaid())
        .put("oldestOverdue", oldest)
        .put("parkedOrders", check.parkedOrders())
        .put("repaired", repaired)
        .put("repairedClients", repairedClients);
  }
}
