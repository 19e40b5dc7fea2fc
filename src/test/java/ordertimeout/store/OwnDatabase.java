package ordertimeout.store;

import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.flywaydb.core.api.configuration.FluentConfiguration;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.UUID;

/**
 * A database of its own on the test server, for a test that migrates it step by step (to a version, given rows,
 * then to the newest); dropped by {@link #close}.
 */
final class OwnDatabase implements AutoCloseable {
  private final String name;
  private final String url;

  OwnDatabase(String prefix) {
    this(prefix, "");
  }

  /** {@code options}: CREATE DATABASE's own, after its name (such as a locale). */
  OwnDatabase(String prefix, String options) {
    name = prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    Sql.execute("CREATE DATABASE " + name + " " + options);
    DatabaseSetup setup = TestDatabase.get();
    String own = setup.connectOptions().getDatabase();
    url = setup.jdbcUrl().replace("/" + own + "?", "/" + name + "?");
  }

  void migrateTo(String version) {
    flyway().target(version).load().migrate();
  }

  void migrateToNewest() {
    flyway().load().migrate();
  }

  Connection connect() throws SQLException {
    return DriverManager.getConnection(url, TestDatabase.connectOptions().getUser(), TestDatabase.connectOptions().getPassword());
  }

  @Override
  public void close() {
    Sql.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  }

  private FluentConfiguration flyway() {
    PgConnectOptions options = TestDatabase.connectOptions();
    return DatabaseSetup.flyway(url, options.getUser(), options.getPassword());
  }
}
