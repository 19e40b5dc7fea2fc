package ordertimeout.store;

import ordertimeout.support.Await;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A statement that finds rows by time through a BRIN index reads a few pages, not every row written since the table's
 * last vacuum, when nothing matches: the indexes summarize each range of pages once it fills (retention's since V26,
 * decision 0041; each orders partition's since V27). Autovacuum is off for the tables here, so that only those
 * summaries, not a vacuum, can keep the reads short; its naptime is a second, so that it carries the requests out at
 * once.
 */
class BrinSummariesTest {
  private static final int ROWS = 100_000;
  private static final int FEW_BUFFERS = 300;

  private final List<String> withoutAutovacuum = new ArrayList<>();

  @BeforeEach
  void fewerNaps() {
    TestDatabase.reset();
    Sql.executeDdl("ALTER SYSTEM SET autovacuum_naptime = 1");
    Sql.executeDdl("SELECT pg_reload_conf()");
  }

  @AfterEach
  void usualNaps() {
    Sql.executeDdl("ALTER SYSTEM RESET autovacuum_naptime");
    Sql.executeDdl("SELECT pg_reload_conf()");
    for (String table : withoutAutovacuum) {
      Sql.executeDdl("ALTER TABLE " + table + " RESET (autovacuum_enabled)");
    }
    TestDatabase.reset();
  }

  @Test
  void aRetentionPassWithNothingOldReadsAFewPagesBehindAHundredThousandFreshRows() {
    List.of("outbox", "order_log", "idempotency_keys").forEach(this::withoutAutovacuum);
    Sql.execute("""
        INSERT INTO outbox (order_id, client, type, payload)
        SELECT n, 'client-a', 'ORDER_CREATED', jsonb_build_object('orderId', n::text)
        FROM generate_series(1, ?) AS n""", ROWS);
    Sql.execute("INSERT INTO order_log (order_id, event) SELECT n, 'CREATED' FROM generate_series(1, ?) AS n", ROWS);
    Sql.execute("""
        INSERT INTO idempotency_keys (client, key, request_hash, response_status, response_body, order_id)
        SELECT 'client-a', 'key-' || n, 'hash', 201, '{}', n FROM generate_series(1, ?) AS n""", ROWS);
    withoutAutovacuum.forEach(table -> Sql.executeDdl("ANALYZE " + table)); // as autovacuum's would: no old row
    Map<String, String> passes = new LinkedHashMap<>(); // retention's statements with its default ages, Kafka off
    passes.put("events delivered",
        ordertimeout.store.Sql.DELETE_DELIVERED_EVENTS.replace("$1", "24").replace("$3", "false"));
    passes.put("events expired",
        ordertimeout.store.Sql.DELETE_EXPIRED_EVENTS.replace("$1", "7").replace("$3", "false"));
    passes.put("log lines", ordertimeout.store.Sql.DELETE_OLD_ORDER_LOG.replace("$1", "72"));
    passes.put("idempotency keys", ordertimeout.store.Sql.DELETE_OLD_IDEMPOTENCY_KEYS.replace("$1", "169"));
    passes.replaceAll((pass, statement) -> statement.replace("$2", "1000")); // a batch of retention's default size
    long pagesOfOneTable = Sql.count("SELECT pg_relation_size('outbox') / 8192");

    Map<String, Long> buffers = buffersOnceSummarized(passes);

    System.out.printf("BrinSummariesTest: buffers a pass read with nothing to delete, behind %,d fresh rows (%d pages "
        + "of events): %s%n", ROWS, pagesOfOneTable, buffers);
    assertThat(pagesOfOneTable).as("the events' pages, against the buffers a pass may read")
        .isGreaterThan(3 * FEW_BUFFERS);
    assertThat(buffers).as("buffers each pass read")
        .allSatisfy((pass, read) -> assertThat(read).isLessThan(FEW_BUFFERS));
  }

  @Test
  void aSearchByCreationTimeMatchingNothingReadsAFewPagesBehindAHundredThousandFreshOrders() {
    Sql.execute(ORDERS_FROM, 0, 0);
    String partition = Sql.rows("SELECT tableoid::regclass::text AS partition FROM orders").get(0).get("partition")
        .toString();
    withoutAutovacuum(partition);
    Sql.execute(ORDERS_FROM, 1, ROWS - 1);
    Sql.executeDdl("ANALYZE " + partition);
    String search = ordertimeout.store.Sql.countMatches(ordertimeout.store.Sql.MATCH_CREATED_AFTER.formatted(1))
        .replace("$1", "now() + interval '1 hour'");
    long pages = Sql.count("SELECT pg_relation_size(?::regclass) / 8192", partition);

    Map<String, Long> buffers = buffersOnceSummarized(Map.of("orders created from an hour ahead", search));

    System.out.printf("BrinSummariesTest: buffers a search by creation time read with nothing to find, behind %,d "
        + "fresh orders (%d pages of %s): %s%n", ROWS, pages, partition, buffers);
    assertThat(pages).as("the orders' pages, against the buffers a search may read").isGreaterThan(3 * FEW_BUFFERS);
    assertThat(buffers).as("buffers the search read")
        .allSatisfy((statement, read) -> assertThat(read).isLessThan(FEW_BUFFERS));
  }

  /** Unpaid orders number n to m (the parameters), created a millisecond apart, ids from now's first onwards. */
  private static final String ORDERS_FROM = """
      INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
      SELECT order_id_at(now()) + n, n % 16, 'client-a', 'user-' || n % 1000, 'default', 'UNPAID',
             now() - interval '2 minutes' + n * interval '1 millisecond', now() + interval '1 hour'
      FROM generate_series(?::int, ?::int) AS n""";

  private void withoutAutovacuum(String table) {
    Sql.executeDdl("ALTER TABLE " + table + " SET (autovacuum_enabled = false)");
    withoutAutovacuum.add(table);
  }

  /** Each statement's buffers, read again every half second (autovacuum's next nap carries the summaries out) for up
   * to a minute until each reads fewer than {@link #FEW_BUFFERS}. */
  private static Map<String, Long> buffersOnceSummarized(Map<String, String> statements) {
    Map<String, Long> buffers = new LinkedHashMap<>();
    long giveUpAt = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    do {
      Await.sleep(500);
      statements.forEach((name, statement) -> buffers.put(name, Sql.buffersTouched(statement)));
    } while (buffers.values().stream().anyMatch(read -> read >= FEW_BUFFERS) && System.nanoTime() < giveUpAt);
    return buffers;
  }
}
