package ordertimeout.support;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.clock.WallClock;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.store.DatabaseSetup;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.Pools;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * One real PostgreSQL per test JVM (Maven runs two): the embedded one the service itself starts, in a
 * temporary folder, migrated by the production code. Stopped when the JVM exits, and its folder deleted.
 */
public final class TestDatabase {
  private static final String DEADLOCK = "40P01";
  private static final int DELETE_AT_MOST = 10_000;
  /**
   * Up to {@link #DELETE_AT_MOST}, the rows of the fullest of the tables tests fill by the ten thousand: deleted, they
   * are dead rows that the next autovacuum spends a while on, holding the table against the next class's VACUUM.
   */
  private static final String MOST_ROWS_OF_A_TABLE = "SELECT greatest("
      + Stream.of("orders", "outbox", "order_log", "idempotency_keys", "webhook_deliveries")
          .map(table -> "(SELECT count(*) FROM (SELECT 1 FROM " + table + " LIMIT " + DELETE_AT_MOST + ") few)")
          .collect(Collectors.joining(", "))
      + ")";
  public static final int SHARDS = 64;
  private static DatabaseSetup database;

  private TestDatabase() {}

  public static synchronized DatabaseSetup get() {
    if (database == null) {
      Path dataDir = TempFolders.create("order-timeout-test-db");
      // without fsync: a crash of the machine loses nothing a test needs, and commits cost what they always did here
      DatabaseSetup started = DatabaseSetup.prepare(databaseConfig(Map.of("OT_DATABASE_URL", "", "OT_DATABASE_DATA_DIR",
          dataDir.toString(), "OT_DATABASE_SHARDS", Integer.toString(SHARDS), "OT_DATABASE_EMBEDDED_FSYNC", "false")));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        started.close();
        TempFolders.delete(dataDir);
      }, "stop-test-database"));
      database = started;
    }
    return database;
  }

  /** The {@code database} section of conf/application.yaml with OT_* {@code overrides}. */
  public static AppConfig.Database databaseConfig(Map<String, String> overrides) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), overrides::get)).database();
  }

  public static PgConnectOptions connectOptions() {
    return get().connectOptions();
  }

  /** The close and reload statements on this database, with the shipped pool settings and this machine's clock. */
  public static DeadlineStore deadlineStore(Vertx vertx, int connections) {
    return new DeadlineStore(Pools.shared(vertx, Pools.DEADLINES, connectOptions(), connections, 1,
        databaseConfig(Map.of()).deadlines()), WallClock.SYSTEM);
  }

  /** The database as a {@code database.url} (postgresql://user:password@host:port/db). */
  public static String url() {
    return url(connectOptions());
  }

  /** Any database's {@code options} as a {@code database.url}. */
  public static String url(PgConnectOptions options) {
    return "postgresql://" + options.getUser() + ":" + options.getPassword() + "@" + options.getHost() + ":"
        + options.getPort() + "/" + options.getDatabase();
  }

  public static Connection jdbc() {
    try {
      return get().openJdbc();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The nodes of earlier test classes are stopped, some killed without releasing their lease: their leases end, an
   * hour ago, so that the next node is alone on the database, as a node alone answers reads from its status cache (a
   * node counts another whose cache was on for a lease after that lease ended, and one starting waits for it).
   */
  public static void endLeasesOfStoppedNodes() {
    Sql.execute("DO $$ BEGIN IF to_regclass('node_leases') IS NOT NULL THEN UPDATE node_leases SET expires_at = "
        + "least(expires_at, now() - interval '1 hour'), status_cache = false; END IF; END $$");
  }

  /**
   * {@link #endLeasesOfStoppedNodes} and {@link #reset}: a node started next is alone on empty tables, not on what an
   * earlier class left (overdue orders it would close at once, leases it would wait for).
   */
  public static void resetForANewNode() {
    endLeasesOfStoppedNodes();
    reset();
  }

  /**
   * Empties every table but the pinned settings, and the record of the stock put in ({@link StockLedger}). A service
   * still running locks the tables or rows in another order than the reset does (a gauge joins close_failures to
   * orders), so PostgreSQL may end the reset as a deadlock victim: it is tried again.
   */
  public static void reset() {
    for (int attempt = 1; ; attempt++) {
      try (Connection connection = jdbc(); Statement statement = connection.createStatement()) {
        // A test leaves a few rows, which DELETE takes at once; TRUNCATE makes new files for every partition of orders
        // and order_items and each of their indexes (V11): OpenApiContractTest, 242 resets, took 161 s with it, 35 s
        // before V11. A test that laid out many orders is truncated, so that the next one does not meet their dead rows.
        boolean many = Sql.count(connection, MOST_ROWS_OF_A_TABLE) >= DELETE_AT_MOST;
        connection.setAutoCommit(false);
        statement.execute(many
            ? "TRUNCATE orders, order_items, inventory, inventory_paid, inventory_released, inventory_log, "
                + "idempotency_keys, outbox, outbox_pending, outbox_feed, outbox_feed_deleted, webhook_deliveries, "
                + "order_log, close_failures, reconciliation_runs, bulk_jobs"
            : """
                DELETE FROM webhook_deliveries; DELETE FROM outbox; DELETE FROM outbox_pending; DELETE FROM outbox_feed;
                DELETE FROM outbox_feed_deleted;
                DELETE FROM order_items;
                DELETE FROM orders; DELETE FROM client_holdings; DELETE FROM inventory; DELETE FROM inventory_paid;
                DELETE FROM inventory_released; DELETE FROM inventory_log; DELETE FROM idempotency_keys;
                DELETE FROM order_log;
                DELETE FROM close_failures; DELETE FROM reconciliation_runs; DELETE FROM bulk_jobs""");
        connection.commit();
        StockLedger.clear();
        return;
      } catch (SQLException e) {
        if (!DEADLOCK.equals(e.getSQLState()) || attempt == 5) {
          throw new IllegalStateException(e);
        }
      }
    }
  }
}
