package ordertimeout.bench;

import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.store.DatabaseSetup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.Map;

/** A fresh embedded PostgreSQL for one benchmark run, under target/bench-db, and JDBC helpers for seeding and checking. */
final class BenchDatabase implements AutoCloseable {
  final DatabaseSetup setup;

  private BenchDatabase(DatabaseSetup setup) {
    this.setup = setup;
  }

  static BenchDatabase fresh() {
    return fresh("bench-db");
  }

  /** A fresh database in target/{@code name}, so that benchmarks running side by side do not share one. */
  static BenchDatabase fresh(String name) {
    Path dir = Path.of("target", name);
    try {
      if (Files.exists(dir)) {
        try (var paths = Files.walk(dir)) {
          paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new BenchDatabase(DatabaseSetup.prepare(config(Map.of("OT_DATABASE_URL", "", "OT_DATABASE_DATA_DIR", dir.toString(),
        "OT_DATABASE_POOL_SIZE", "16", "OT_DATABASE_SHARDS", "64")).database()));
  }

  /** The configuration of conf/application.yaml with these OT_* overrides. */
  static AppConfig config(Map<String, String> overrides) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), overrides::get));
  }

  void execute(String sql, Object... params) {
    try (Connection c = setup.openJdbc(); PreparedStatement s = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        s.setObject(i + 1, params[i]);
      }
      s.execute();
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  void executeScript(String... statements) {
    try (Connection c = setup.openJdbc(); Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  double number(String sql, Object... params) {
    try (Connection c = setup.openJdbc(); PreparedStatement s = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        s.setObject(i + 1, params[i]);
      }
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getDouble(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** SKUs whose reserved count is not the sum of their unpaid items: 0 when the stock invariant holds. */
  long stockInvariantViolations() {
    return (long) number("""
        SELECT count(*) FROM inventory inv
        WHERE inv.reserved <> coalesce((SELECT sum(i.qty) FROM order_items i JOIN orders o ON o.id = i.order_id
                                        WHERE i.sku = inv.sku AND o.status = 'UNPAID'), 0)""");
  }

  @Override
  public void close() {
    setup.close();
  }
}
