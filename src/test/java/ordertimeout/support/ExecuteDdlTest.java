package ordertimeout.support;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThatCode;

/**
 * {@link Sql#executeDdl} gets its lock from an autovacuum that holds the table, as a statement that waits long enough
 * does: RetentionReadsTest's VACUUMs once took two minutes in a full run, behind autovacuums of the rows an earlier
 * test had left. The autovacuum here is slowed to a page every tenth of a second, so that it would hold the table for
 * minutes.
 */
class ExecuteDdlTest {
  private final String table = "ddl_probe_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);

  @BeforeEach
  void autovacuumLooksEverySecond() {
    Sql.executeDdl("ALTER SYSTEM SET autovacuum_naptime = 1");
    Sql.executeDdl("SELECT pg_reload_conf()");
  }

  @AfterEach
  void usualNaps() {
    Sql.executeDdl("DROP TABLE IF EXISTS " + table);
    Sql.executeDdl("ALTER SYSTEM RESET autovacuum_naptime");
    Sql.executeDdl("SELECT pg_reload_conf()");
  }

  @Test
  void aVacuumIsNotHeldOffByAnAutovacuumOfTheSameTable() {
    Sql.execute("CREATE TABLE " + table + " (n integer, pad text) WITH (autovacuum_vacuum_cost_delay = 100, "
        + "autovacuum_vacuum_cost_limit = 1, autovacuum_vacuum_insert_threshold = 1, "
        + "autovacuum_vacuum_insert_scale_factor = 0, autovacuum_analyze_threshold = 2000000000)");
    Sql.execute("INSERT INTO " + table + " SELECT n, repeat('x', 40) FROM generate_series(1, 200000) AS n");
    Await.until("an autovacuum of the table", Duration.ofSeconds(60), () -> Sql.count(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND query LIKE ?",
        "%" + table + "%") > 0);

    assertThatCode(() -> Sql.executeDdl("VACUUM " + table)).as("the VACUUM, behind the autovacuum")
        .doesNotThrowAnyException();
  }
}
