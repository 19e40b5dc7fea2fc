package ordertimeout.store;

import ordertimeout.support.Await;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A retention pass with nothing old enough to delete reads a few pages, not every row written since the table's last
 * vacuum: the BRIN indexes it finds old rows by summarize each range of pages once it fills (V26, decision 0041).
 * Autovacuum is off for the three tables here, so that only those summaries, not a vacuum, can keep the pass short;
 * its naptime is a second, so that it carries the requests out at once.
 */
class RetentionReadsTest {
  private static final int ROWS = 100_000;
  private static final List<String> TABLES = List.of("outbox", "order_log", "idempotency_keys");

  @BeforeEach
  void fewerNaps() {
    TestDatabase.reset();
    for (String table : TABLES) {
      Sql.executeDdl("ALTER TABLE " + table + " SET (autovacuum_enabled = false)");
    }
    Sql.executeDdl("ALTER SYSTEM SET autovacuum_naptime = 1");
    Sql.executeDdl("SELECT pg_reload_conf()");
  }

  @AfterEach
  void usualNaps() {
    Sql.executeDdl("ALTER SYSTEM RESET autovacuum_naptime");
    Sql.executeDdl("SELECT pg_reload_conf()");
    for (String table : TABLES) {
      Sql.executeDdl("ALTER TABLE " + table + " RESET (autovacuum_enabled)");
    }
    TestDatabase.reset();
  }

  @Test
  void aPassWithNothingOldReadsAFewPagesBehindAHundredThousandFreshRows() {
    Sql.execute("""
        INSERT INTO outbox (order_id, client, type, payload)
        SELECT n, 'client-a', 'ORDER_CREATED', jsonb_build_object('orderId', n::text)
        FROM generate_series(1, ?) AS n""", ROWS);
    Sql.execute("INSERT INTO order_log (order_id, event) SELECT n, 'CREATED' FROM generate_series(1, ?) AS n", ROWS);
    Sql.execute("""
        INSERT INTO idempotency_keys (client, key, request_hash, response_status, response_body, order_id)
        SELECT 'client-a', 'key-' || n, 'hash', 201, '{}', n FROM generate_series(1, ?) AS n""", ROWS);
    for (String table : TABLES) {
      Sql.executeDdl("ANALYZE " + table); // as autovacuum's analyze would: no old row
    }
    Map<String, String> passes = new LinkedHashMap<>(); // retention's statements with its default ages, Kafka off
    passes.put("events delivered",
        ordertimeout.store.Sql.DELETE_DELIVERED_EVENTS.replace("$1", "24").replace("$3", "false"));
    passes.put("events expired",
        ordertimeout.store.Sql.DELETE_EXPIRED_EVENTS.replace("$1", "7").replace("$3", "false"));
    passes.put("log lines", ordertimeout.store.Sql.DELETE_OLD_ORDER_LOG.replace("$1", "72"));
    passes.put("idempotency keys", ordertimeout.store.Sql.DELETE_OLD_IDEMPOTENCY_KEYS.replace("$1", "169"));
    long pagesOfOneTable = Sql.count("SELECT pg_relation_size('outbox') / 8192");

    Map<String, Long> buffers = new LinkedHashMap<>();
    long giveUpAt = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    do {
      Await.sleep(500); // autovacuum's next nap carries the summaries out
      passes.forEach((pass, statement) -> buffers.put(pass, Sql.buffersTouched(statement.replace("$2", "1000"))));
    } while (buffers.values().stream().anyMatch(read -> read >= 300) && System.nanoTime() < giveUpAt);

    System.out.printf("RetentionReadsTest: buffers a pass read with nothing to delete, behind %,d fresh rows (%d pages "
        + "of events): %s%n", ROWS, pagesOfOneTable, buffers);
    assertThat(pagesOfOneTable).as("the events' pages, against the 300 buffers a pass may read").isGreaterThan(900);
    assertThat(buffers).as("buffers each pass read").allSatisfy((pass, read) -> assertThat(read).isLessThan(300));
  }
}
