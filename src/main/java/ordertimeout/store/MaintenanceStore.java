package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import ordertimeout.config.AppConfig;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What reconciliation and retention ask of the database. They have a small pool of their own, so that
 * a long check or a run of deletes never makes a close wait for a connection.
 */
public final class MaintenanceStore {
  public static final String POOL = "order-timeout-maintenance";
  public static final int POOL_SIZE = 2;

  private final Pool pool;

  public MaintenanceStore(Pool pool) {
    this.pool = pool;
  }

  public static MaintenanceStore shared(Vertx vertx, PgConnectOptions connectOptions, AppConfig.PoolWaits waits) {
    return new MaintenanceStore(Pools.shared(vertx, POOL, connectOptions, POOL_SIZE, 1, waits));
  }

  /** A SKU whose {@code reserved} is not the sum of its items in unpaid orders ({@code expected}). */
  public record Difference(String sku, long reserved, long expected) {}

  /** A client whose counted holdings ({@code unpaid} orders, {@code units}) are not what its unpaid orders hold. */
  public record ClientDifference(String client, long unpaid, long units, long expectedUnpaid, long expectedUnits) {}

  public record Overdue(long id, Instant closeAt) {}

  /**
   * The result of a check: the database clock, the SKUs checked, the first differences in SKU order
   * with their total, likewise the clients whose holdings are off, and the unpaid orders overdue (with the oldest,
   * null when none).
   */
  public record Check(Instant checkedAt, long skusChecked, List<Difference> differences, long differencesTotal,
                      List<ClientDifference> clientDifferences, long clientDifferencesTotal, long overdueUnpaid,
                      Overdue oldestOverdue, long parkedOrders) {}

  /** A repaired SKU: {@code reserved} went from {@code from} to {@code to}. */
  public record Change(String sku, long from, long to) {}

  /**
   * Reads only: the stock invariant, SKU by SKU, the clients' holdings, the unpaid orders overdue by more than
   * {@code overdueSeconds} (parked ones included), and the parked orders.
   * <p>
   * The statements go out together on one connection, which runs them one after another: the check takes one of the
   * pool's two connections, never both. Run on the pool, the two long ones (every unpaid order's items) took both, and
   * the others failed after the pool's connection wait whenever those took longer (a big database). They share one
   * REPEATABLE READ, READ ONLY transaction, so that the report's figures come from one snapshot and agree with each
   * other (the parked orders among the overdue ones) and {@code now()} is the snapshot's. That costs no lock the
   * statements do not take anyway (ACCESS SHARE, now held to the last statement's end) and no wait on the client
   * between statements (they are sent at once); it keeps vacuum's horizon from the first statement to the last, as
   * the long statements one after the other nearly did already. A read-only transaction never fails to serialize.
   */
  public Future<Check> check(int overdueSeconds, int listLimit) {
    return pool.withTransaction(conn -> {
      Future<?> snapshot = conn.query(Sql.READ_ONLY_SNAPSHOT).execute();
      Future<Row> inventory = conn.query(Sql.COUNT_INVENTORY).execute().map(rows -> rows.iterator().next());
      Future<List<Row>> differing = conn.preparedQuery(Sql.RESERVED_DIFFERENCES).execute(Tuple.of(listLimit))
          .map(MaintenanceStore::list);
      Future<List<Row>> clientsDiffering = conn.preparedQuery(Sql.CLIENT_HOLDINGS_DIFFERENCES)
          .execute(Tuple.of(listLimit)).map(MaintenanceStore::list);
      Future<List<Row>> overdue = conn.preparedQuery(Sql.OVERDUE_UNPAID).execute(Tuple.of(overdueSeconds))
          .map(MaintenanceStore::list);
      Future<Long> parked = conn.query(Sql.COUNT_PARKED).execute().map(rows -> rows.iterator().next().getLong(0));
      return Future.all(List.of(snapshot, inventory, differing, clientsDiffering, overdue, parked))
          .map(all -> check(inventory.result(), differing.result(), clientsDiffering.result(), overdue.result(),
              parked.result()));
    });
  }

  private static Check check(Row inventory, List<Row> differing, List<Row> clientsDiffering, List<Row> overdue,
                             long parked) {
    List<Difference> differences = new ArrayList<>();
    for (Row row : differing) {
      differences.add(new Difference(row.getString("sku"), row.getLong("reserved"), row.getLong("expected")));
    }
    long differencesTotal = differing.isEmpty() ? 0 : differing.get(0).getLong("total");
    List<ClientDifference> clientDifferences = new ArrayList<>();
    for (Row row : clientsDiffering) {
      clientDifferences.add(new ClientDifference(row.getString("client"), row.getLong("unpaid"), row.getLong("units"),
          row.getLong("expected_unpaid"), row.getLong("expected_units")));
    }
    long clientDifferencesTotal = clientsDiffering.isEmpty() ? 0 : clientsDiffering.get(0).getLong("total");
    Row oldest = overdue.isEmpty() ? null : overdue.get(0);
    return new Check(
        inventory.getOffsetDateTime("checked_at").toInstant(),
        inventory.getLong("skus"),
        List.copyOf(differences),
        differencesTotal,
        List.copyOf(clientDifferences),
        clientDifferencesTotal,
        oldest == null ? 0 : oldest.getLong("total"),
        oldest == null ? null : new Overdue(oldest.getLong("id"), oldest.getOffsetDateTime("close_at").toInstant()),
        parked);
  }

  /**
   * One transaction: finds the SKUs that differ, locks their inventory rows in SKU order (as every
   * transaction touching several SKUs does, so a repair cannot deadlock with a close), recomputes the
   * sums under those locks and sets {@code reserved} to them. {@code available} is not touched.
   */
  public Future<List<Change>> repairReserved() {
    return pool.withTransaction(conn -> conn.preparedQuery(Sql.RESERVED_DIFFERENCES).execute(Tuple.of(Integer.MAX_VALUE))
        .compose(differing -> {
          List<String> skus = new ArrayList<>();
          for (Row row : differing) {
            skus.add(row.getString("sku"));
          }
          if (skus.isEmpty()) {
            return Future.succeededFuture(List.<Change>of());
          }
          Tuple sorted = Tuple.of(skus.toArray(new String[0]));
          return conn.preparedQuery(Sql.LOCK_STOCK_BY_SKU).execute(sorted)
              .compose(locked -> conn.preparedQuery(Sql.REPAIR_RESERVED).execute(sorted))
              .map(changed -> {
                List<Change> changes = new ArrayList<>();
                for (Row row : changed) {
                  changes.add(new Change(row.getString("sku"), row.getLong("was"), row.getLong("reserved")));
                }
                changes.sort((a, b) -> a.sku().compareTo(b.sku()));
                return List.copyOf(changes);
              });
        }));
  }

  /**
   * Sets every client's holdings right (one statement, exact while orders keep changing); the clients repaired. The
   * statement adds each difference it sees, so two repairs at once (two nodes, an admin's retry) would each add it:
   * they run one after another in the cluster, and a later one's statement sees what the earlier committed.
   */
  public Future<List<String>> repairClientHoldings() {
    return pool.withTransaction(conn -> conn.query(Sql.LOCK_HOLDINGS_REPAIR).execute()
        .compose(locked -> conn.query(Sql.REPAIR_CLIENT_HOLDINGS).execute())).map(rows -> {
      List<String> clients = new ArrayList<>();
      rows.forEach(row -> clients.add(row.getString("client")));
      return List.copyOf(clients);
    });
  }

  /** Deletes up to {@code batchSize} order_log rows older than {@code hours}; the number deleted. */
  public Future<Integer> deleteOldOrderLog(int hours, int batchSize) {
    return delete(Sql.DELETE_OLD_ORDER_LOG, hours, batchSize);
  }

  /** One delivered events' pass: how many went, the last event id it looked at, and whether more may follow. */
  public record DeliveredEvents(int deleted, long lookedUpTo, boolean more) {}

  /**
   * Deletes, of the {@code batchSize} events after id {@code after}, those older than {@code hours} that every sink
   * wanting them has ({@code kafka}: the relay runs, so an event must be published too); never an undelivered one.
   */
  public Future<DeliveredEvents> deleteDeliveredEvents(int hours, int batchSize, boolean kafka, long after) {
    Tuple parameters = Tuple.of(hours, batchSize, kafka, after);
    return pool.preparedQuery(Sql.DELETE_DELIVERED_EVENTS).execute(parameters).map(rows -> {
      Row row = rows.iterator().next();
      return new DeliveredEvents(row.getLong("deleted").intValue(), row.getLong("up_to"), row.getBoolean("more"));
    });
  }

  /** How many events one delete at the maximum age took, and how many of them some sink did not have. */
  public record Expired(int deleted, int undelivered) {}

  /** Deletes up to {@code batchSize} events older than {@code days}, delivered or not. */
  public Future<Expired> deleteExpiredEvents(int days, int batchSize, boolean kafka) {
    return pool.preparedQuery(Sql.DELETE_EXPIRED_EVENTS).execute(Tuple.of(days, batchSize, kafka)).map(rows -> {
      Row row = rows.iterator().next();
      return new Expired(row.getLong("deleted").intValue(), row.getLong("undelivered").intValue());
    });
  }

  /** Deletes up to {@code batchSize} bulk jobs finished more than {@code days} ago. */
  public Future<Integer> deleteOldBulkJobs(int days, int batchSize) {
    return delete(Sql.DELETE_OLD_BULK_JOBS, days, batchSize);
  }

  /** Deletes up to {@code batchSize} reconciliation runs older than {@code days}, never the latest finished one. */
  public Future<Integer> deleteOldReconciliationRuns(int days, int batchSize) {
    return delete(Sql.DELETE_OLD_RECONCILIATION_RUNS, days, batchSize);
  }

  /** Deletes up to {@code batchSize} idempotency keys older than {@code hours}. */
  public Future<Integer> deleteOldIdempotencyKeys(int hours, int batchSize) {
    return delete(Sql.DELETE_OLD_IDEMPOTENCY_KEYS, hours, batchSize);
  }

  private Future<Integer> delete(String sql, int hours, int batchSize) {
    return pool.preparedQuery(sql).execute(Tuple.of(hours, batchSize)).map(rows -> rows.rowCount());
  }

  private static List<Row> list(Iterable<Row> rows) {
    List<Row> list = new ArrayList<>();
    rows.forEach(list::add);
    return list;
  }
}
