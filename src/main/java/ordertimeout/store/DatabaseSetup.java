package ordertimeout.store;

import io.vertx.pgclient.PgConnectOptions;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import io.zonky.test.db.postgres.embedded.PgBinaryResolver;
import io.zonky.test.db.postgres.util.ArchUtils;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigException;
import ordertimeout.config.Secrets;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.database.postgresql.PostgreSQLConfigurationExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Gets the database ready before Vert.x starts (all of it blocks): starts the embedded PostgreSQL
 * when no URL is configured, runs the migrations, and pins the shard count.
 */
public final class DatabaseSetup implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(DatabaseSetup.class);

  /**
   * The PostgreSQL binaries bundled for this system and architecture (postgres-linux-x86_64.txz, ...). zonky's
   * default resolver first runs a script to find the Linux distribution, for distribution-specific bundles this
   * build does not ship, and leaves that script in the temp folder whenever the JVM does not exit normally.
   */
  public static final PgBinaryResolver BUNDLED_BINARIES = (system, machineHardware) -> {
    String name = "postgres-" + system.toLowerCase(Locale.ROOT) + "-" + ArchUtils.normalize(machineHardware) + ".txz";
    InputStream binaries = DatabaseSetup.class.getClassLoader().getResourceAsStream(name);
    if (binaries == null) {
      throw new IOException("no embedded PostgreSQL for this machine: " + name + " is not on the class path");
    }
    return binaries;
  };

  private static final long POSTMASTER_STOP_SECONDS = 10;

  private final PgConnectOptions connectOptions;
  private final EmbeddedPostgres embedded;
  private final Path embeddedData;

  private DatabaseSetup(PgConnectOptions connectOptions, EmbeddedPostgres embedded, Path embeddedData) {
    this.connectOptions = connectOptions;
    this.embedded = embedded;
    this.embeddedData = embeddedData;
  }

  public static DatabaseSetup prepare(AppConfig.Database config) {
    DatabaseSetup setup = config.embedded()
        ? startEmbedded(config)
        : external(config.url());
    try {
      setup.migrate();
      setup.pinShardCount(config.shards());
      return setup;
    } catch (RuntimeException e) {
      setup.close();
      throw e;
    }
  }

  private static DatabaseSetup external(String url) {
    try {
      return new DatabaseSetup(PgConnectOptions.fromUri(url), null, null);
    } catch (RuntimeException e) {
      throw new ConfigException("database.url", "not a postgresql:// URL (" + Secrets.withoutPasswords(e.getMessage()) + ")");
    }
  }

  private static DatabaseSetup startEmbedded(AppConfig.Database config) {
    Path pgData = Path.of(config.dataDir()).resolve("postgres").toAbsolutePath();
    try {
      Files.createDirectories(pgData);
      log.info("starting the embedded PostgreSQL with its data in {}", pgData);
      EmbeddedPostgres postgres = EmbeddedPostgres.builder()
          .setDataDirectory(pgData)
          .setPgBinaryResolver(BUNDLED_BINARIES)
          .setCleanDataDirectory(false)
          .setServerConfig("max_connections", "200")
          .setServerConfig("shared_buffers", config.embeddedSharedBuffersMb() + "MB")
          .setServerConfig("max_wal_size", config.embeddedMaxWalSizeMb() + "MB")
          .setServerConfig("synchronous_commit", "on")
          // the library starts PostgreSQL with -F (fsync off); a setting given after it wins
          .setServerConfig("fsync", config.embeddedFsync() ? "on" : "off")
          // loaded, not created: CREATE EXTENSION pg_stat_statements shows what each statement costs (the benchmarks do)
          .setServerConfig("shared_preload_libraries", "pg_stat_statements")
          // pg_stat_activity shows a session's whole statement (the pays' and closes' run past the default 1 KB)
          .setServerConfig("track_activity_query_size", "16384")
          .start();
      PgConnectOptions options = new PgConnectOptions()
          .setHost("127.0.0.1")
          .setPort(postgres.getPort())
          .setDatabase("postgres")
          .setUser("postgres")
          .setPassword("postgres");
      return new DatabaseSetup(options, postgres, pgData);
    } catch (IOException e) {
      throw new IllegalStateException("the embedded PostgreSQL did not start in " + pgData, e);
    }
  }

  /**
   * Prepared statements are kept per connection, so each is parsed once and then runs in one round trip (without
   * the cache every execution first waits for its own Parse). Each execution is still planned with its parameters
   * ({@code plan_cache_mode}): the array statements depend on how many ids they get, which a generic plan ignores.
   */
  public PgConnectOptions connectOptions() {
    PgConnectOptions options = new PgConnectOptions(connectOptions)
        .setCachePreparedStatements(true)
        .setPreparedStatementCacheSqlLimit(16_384);
    options.addProperty("plan_cache_mode", "force_custom_plan");
    return options;
  }

  public String jdbcUrl() {
    String host = connectOptions.getHost().contains(":") ? "[" + connectOptions.getHost() + "]" : connectOptions.getHost();
    String sslMode = connectOptions.getSslMode().name().toLowerCase(Locale.ROOT).replace('_', '-');
    return "jdbc:postgresql://" + host + ":" + connectOptions.getPort() + "/" + connectOptions.getDatabase() + "?sslmode=" + sslMode;
  }

  public Connection openJdbc() throws SQLException {
    return DriverManager.getConnection(jdbcUrl(), connectOptions.getUser(), connectOptions.getPassword());
  }

  private void migrate() {
    flyway(jdbcUrl(), connectOptions.getUser(), connectOptions.getPassword()).load().migrate();
  }

  /** Flyway as the service runs the migrations, on the database at {@code jdbcUrl}. */
  public static FluentConfiguration flyway(String jdbcUrl, String user, String password) {
    FluentConfiguration flyway = Flyway.configure()
        .dataSource(jdbcUrl, user, password)
        .locations("classpath:db/migration")
        // a node starting while another migrates waits for it, trying every second for up to an hour (V30 builds an
        // index over every idempotency key)
        .lockRetryCount(3600);
    // A session-level lock between nodes migrating at once, not one held in a transaction: CREATE INDEX CONCURRENTLY
    // (V30) waits for every open transaction, Flyway's own lock's included, and would wait forever.
    flyway.getConfigurationExtension(PostgreSQLConfigurationExtension.class).setTransactionalLock(false);
    return flyway;
  }

  private void pinShardCount(int shards) {
    try (Connection connection = openJdbc()) {
      try (PreparedStatement insert = connection.prepareStatement(
          "INSERT INTO service_settings (name, value) VALUES ('shards', ?) ON CONFLICT (name) DO NOTHING")) {
        insert.setString(1, Integer.toString(shards));
        insert.executeUpdate();
      }
      try (PreparedStatement select = connection.prepareStatement("SELECT value FROM service_settings WHERE name = 'shards'");
           ResultSet row = select.executeQuery()) {
        row.next();
        int pinned = Integer.parseInt(row.getString(1));
        if (pinned != shards) {
          throw new ConfigException("database.shards",
              "the database was created with " + pinned + " shards; the service refuses to start with " + shards);
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read the shard count from the database", e);
    }
  }

  /**
   * Stops the embedded PostgreSQL and waits until its postmaster has exited. zonky stops it with {@code pg_ctl stop},
   * which as root runs behind {@code unshare -U} and can fail to reach the postmaster; then the postmaster is sent
   * SIGTERM (a smart shutdown: the service's connections are closed by now).
   */
  @Override
  public void close() {
    if (embedded == null) {
      return;
    }
    Optional<ProcessHandle> postmaster = postmaster();
    try {
      embedded.close();
    } catch (IOException e) {
      log.warn("the embedded PostgreSQL did not stop cleanly", e);
    }
    postmaster.filter(ProcessHandle::isAlive).ifPresent(running -> {
      log.info("the embedded PostgreSQL still runs after pg_ctl stop: sending its postmaster ({}) SIGTERM", running.pid());
      running.destroy();
      try {
        running.onExit().get(POSTMASTER_STOP_SECONDS, TimeUnit.SECONDS);
      } catch (ExecutionException | TimeoutException e) {
        log.warn("the embedded PostgreSQL's postmaster ({}) did not stop within {} s", running.pid(), POSTMASTER_STOP_SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
  }

  /** The running postmaster, from the first line of its {@code postmaster.pid}. */
  private Optional<ProcessHandle> postmaster() {
    try {
      return ProcessHandle.of(Long.parseLong(Files.readAllLines(embeddedData.resolve("postmaster.pid")).get(0).trim()));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }
}
