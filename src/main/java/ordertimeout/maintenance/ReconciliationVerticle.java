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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * Reconciliation: every {@code reconciliation.intervalHours} (first that long after start), and on
 * POST /v1/admin/reconcile, checks the stock invariant ({@code reserved} = sum of the quantities of
 * the SKU's items in unpaid orders), that each client's holdings (the counts behind its caps) are what its
 * unpaid orders hold, and counts the unpaid orders overdue by more than the sweep's grace and interval (the
 * sweep closes them; this only reports that it has not). Differences go to a WARN line each (the first
 * {@value #LOGGED} of each kind), to the gauges of {@link NodeStats} (SKUs) and to the reply. With repair,
 * the reserved counts are set right in one transaction, the holdings in one statement, and every change is
 * logged. Runs one at
 * a time: a request while one runs waits for it. With Redis on, the periodic run happens on one node of
 * the cluster per interval ({@link SingletonJob}); a request runs on the node it reached, whatever the
 * lock (an operator asked for it, and a check or repair running on two nodes at once is safe: the repair
 * is one transaction that locks the inventory rows in SKU order).
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
  private MaintenanceStore store;
  private SingletonJob periodic;
  private long timer = -1;
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
    long intervalMillis = config.reconciliation().intervalHours() * 3_600_000L;
    periodic = SingletonJob.create(vertx, JOB, intervalMillis, config.node().id(), redisHealth, stats.registry());
    timer = vertx.setPeriodic(intervalMillis, id -> periodic.run(() -> reconcile(false))
        .onFailure(failure -> log.warn("reconciliation failed, the next run tries again: {}", failure.toString())));
    return vertx.eventBus().<Boolean>consumer(Addresses.RECONCILE, this::onRequest).completion();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return periodic == null ? Future.succeededFuture() : periodic.close();
  }

  private void onRequest(Message<Boolean> request) {
    reconcile(Boolean.TRUE.equals(request.body()))
        .onSuccess(request::reply)
        .onFailure(failure -> {
          log.warn("reconciliation failed: {}", failure.toString());
          request.fail(503, failure.toString());
        });
  }

  /** Queued behind the run in progress, if any: two runs never overlap on this node. */
  private Future<JsonObject> reconcile(boolean repair) {
    Future<JsonObject> next = last.transform(previous -> runOnce(repair));
    last = next;
    return next;
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
    log.info("reconciliation checked {} SKUs: {} differing, {} clients' holdings differing, {} unpaid orders overdue",
        check.skusChecked(), check.differencesTotal(), check.clientDifferencesTotal(), check.overdueUnpaid());
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
        .put("repaired", repaired)
        .put("repairedClients", repairedClients);
  }
}
