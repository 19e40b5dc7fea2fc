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
 * A search by creation time through the orders' BRIN index reads a few pages, not every order written since the
 * partition's last vacuum, when nothing matches: each partition's index summarizes each range of pages once it fills
 * (V27, decision 0041). Autovacuum is off for the partition here, so that only those summaries, not a vacuum, can keep
 * the reads short; its naptime is a second, so that it carries the requests out at once.
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
