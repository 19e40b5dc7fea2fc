package ordertimeout.store;

import ordertimeout.support.Sql;
import ordertimeout.support.TempFolders;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The embedded PostgreSQL of the default configuration flushes its commits to disk: the library that starts it passes
 * {@code -F} (fsync off), which would lose committed orders if the machine crashed. The tests' own database runs
 * without, as {@code database.embeddedFsync: false} asks.
 */
class EmbeddedFsyncTest {
  @Test
  void theDefaultEmbeddedDatabaseFlushesCommitsToDisk() throws SQLException {
    Path dataDir = TempFolders.create("order-timeout-fsync-db");
    try (DatabaseSetup database = DatabaseSetup.prepare(
        TestDatabase.databaseConfig(Map.of("OT_DATABASE_URL", "", "OT_DATABASE_DATA_DIR", dataDir.toString())));
         Connection connection = database.openJdbc()) {
      assertThat(Sql.rows(connection, "SHOW fsync").get(0).get("fsync")).isEqualTo("on");
    } finally {
      TempFolders.delete(dataDir);
    }
  }

  @Test
  void theTestsDatabaseRunsWithoutIt() throws SQLException {
    try (Connection connection = TestDatabase.jdbc()) {
      assertThat(Sql.rows(connection, "SHOW fsync").get(0).get("fsync")).isEqualTo("off");
    }
  }
}
