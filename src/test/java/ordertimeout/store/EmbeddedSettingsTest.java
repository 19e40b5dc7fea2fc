package ordertimeout.store;

import ordertimeout.support.Sql;
import ordertimeout.support.TempFolders;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The embedded PostgreSQL runs as configured. The default flushes its commits to disk: the library that starts it
 * passes {@code -F} (fsync off), which would lose committed orders if the machine crashed. The tests' own database
 * runs without, as {@code database.embeddedFsync: false} asks. Its page cache and the WAL between two checkpoints are
 * {@code database.embeddedSharedBuffersMb} and {@code database.embeddedMaxWalSizeMb} (decision 0042).
 */
class EmbeddedSettingsTest {
  @Test
  void theDefaultEmbeddedDatabaseFlushesCommitsToDiskWithRoomForAStorm() throws SQLException {
    Map<String, Object> settings = settingsOf(Map.of());
    assertThat(settings).containsEntry("fsync", "on").containsEntry("shared_buffers", "2GB")
        .containsEntry("max_wal_size", "8GB");
  }

  @Test
  void itsPageCacheAndWalBetweenCheckpointsAreConfigured() throws SQLException {
    Map<String, Object> settings = settingsOf(Map.of("OT_DATABASE_EMBEDDED_SHARED_BUFFERS_MB", "64",
        "OT_DATABASE_EMBEDDED_MAX_WAL_SIZE_MB", "320"));
    assertThat(settings).containsEntry("shared_buffers", "64MB").containsEntry("max_wal_size", "320MB");
  }

  @Test
  void theTestsDatabaseRunsWithoutIt() throws SQLException {
    try (Connection connection = TestDatabase.jdbc()) {
      assertThat(Sql.rows(connection, "SHOW fsync").get(0).get("fsync")).isEqualTo("off");
    }
  }

  /** fsync, shared_buffers and max_wal_size of an embedded PostgreSQL started with these OT_* overrides. */
  private static Map<String, Object> settingsOf(Map<String, String> overrides) throws SQLException {
    Path dataDir = TempFolders.create("order-timeout-settings-db");
    Map<String, String> environment = new HashMap<>(overrides);
    environment.put("OT_DATABASE_URL", "");
    environment.put("OT_DATABASE_DATA_DIR", dataDir.toString());
    try (DatabaseSetup database = DatabaseSetup.prepare(TestDatabase.databaseConfig(environment));
         Connection connection = database.openJdbc()) {
      return Sql.rows(connection, """
          SELECT current_setting('fsync') AS fsync, current_setting('shared_buffers') AS shared_buffers,
                 current_setting('max_wal_size') AS max_wal_size""").get(0);
    } finally {
      TempFolders.delete(dataDir);
    }
  }
}
