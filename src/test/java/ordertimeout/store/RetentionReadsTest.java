package ordertimeout.store;

import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Retention's passes read a bounded head of their tables, oldest first (decision 0045), also once the pages that a
 * deleted day of rows left free have taken the next day's: a pass with nothing old to delete reads a few pages. The
 * BRIN indexes used before widened each range the new rows went into, from the deleted rows' time to the new ones',
 * until every range matched every pass and each pass read the whole table.
 */
class RetentionReadsTest {
  private static final int ROWS = 100_000;
  private static final int KEPT = 2_000;
  private static final int FEW_BUFFERS = 300;
  private static final List<String> TABLES = List.of("outbox", "order_log", "idempotency_keys");

  /**
   * What each step took, printed: this class once took 112 and 122 s in full runs of the suite, with nothing logged,
   * against 5-9 s alone; the next such run should tell which step waited.
   */
  private final Map<String, Long> stepMillis = new LinkedHashMap<>();
  private long stepStarted = System.nanoTime();

  @BeforeEach
  void resetBefore() {
    stepStarted = System.nanoTime();
    TestDatabase.reset();
    step("reset before");
  }

  @AfterEach
  void resetAfter() {
    TestDatabase.reset();
    step("reset after");
    System.out.printf("RetentionReadsTest: steps took (ms) %s%n", stepMillis);
    stepMillis.clear();
  }

  private void step(String name) {
    long now = System.nanoTime();
    stepMillis.put(name, (now - stepStarted) / 1_000_000);
    stepStarted = now;
  }

  @Test
  void aPassWithNothingOldReadsAFewPagesOnceTheFreedPagesOfADeletedDayTookNewRows() {
    write("old", 1, ROWS, "now() - interval '10 days'");
    write("kept", ROWS + 1, ROWS + KEPT, "now() - interval '1 hour'"); // at the tables' end: vacuum cannot cut them
    step("old and kept rows written");
    TABLES.forEach(table -> Sql.executeDdl("VACUUM " + table)); // as autovacuum does in a day: every page visited
    step("first vacuum");
    deleteAsRetentionWould(Map.of(
        "events", ordertimeout.store.Sql.DELETE_EXPIRED_EVENTS.replace("$1", "7").replace("$3", "false"),
        "log lines", ordertimeout.store.Sql.DELETE_OLD_ORDER_LOG.replace("$1", "72"),
        "idempotency keys", ordertimeout.store.Sql.DELETE_OLD_IDEMPOTENCY_KEYS.replace("$1", "169")));
    step("old rows deleted");
    TABLES.forEach(table -> Sql.executeDdl("VACUUM " + table));
    step("second vacuum");
    long pagesBefore = pages("outbox");
    write("new", ROWS + KEPT + 1, 2 * ROWS + KEPT, "now()");
    step("new rows written");
    TABLES.forEach(table -> Sql.executeDdl("ANALYZE " + table));
    step("analyze");
    assertThat(pages("outbox")).as("the new rows went into the pages the deleted ones left")
        .isLessThan(pagesBefore * 3 / 2);

    Map<String, String> passes = new LinkedHashMap<>(); // retention's statements with its default ages, Kafka off
    passes.put("events delivered", ordertimeout.store.Sql.DELETE_DELIVERED_EVENTS.replace("$1", "24")
        .replace("$3", "false").replace("$4", "0"));
    passes.put("events expired",
        ordertimeout.store.Sql.DELETE_EXPIRED_EVENTS.replace("$1", "7").replace("$3", "false"));
    passes.put("log lines", ordertimeout.store.Sql.DELETE_OLD_ORDER_LOG.replace("$1", "72"));
    passes.put("idempotency keys", ordertimeout.store.Sql.DELETE_OLD_IDEMPOTENCY_KEYS.replace("$1", "169"));
    Map<String, Long> buffers = new LinkedHashMap<>();
    passes.forEach((pass, statement) -> buffers.put(pass, Sql.buffersTouched(statement.replace("$2", "1000"))));
    step("passes explained");

    System.out.printf("RetentionReadsTest: buffers a pass read with nothing to delete, over %,d pages of events: %s%n",
        pages("outbox"), buffers);
    assertThat(pages("outbox")).as("the events' pages, against the buffers a pass may read")
        .isGreaterThan(3 * FEW_BUFFERS);
    assertThat(buffers).as("buffers each pass read")
        .allSatisfy((pass, read) -> assertThat(read).isLessThan(FEW_BUFFERS));
  }

  @Test
  void eventsAWebhookLacksAreLookedAtOnceAndTheDeliveredOnesBehindThemGo() {
    List<Long> failed = events(5, "now() - interval '2 days'");
    failed.forEach(id -> Sql.execute("INSERT INTO webhook_deliveries (event_id, position, order_id, shard, sink, "
        + "status) VALUES (?, ?, 1, 0, 'http://127.0.0.1:9/hook', 'FAILED')", id, id));
    List<Long> delivered = events(3, "now() - interval '2 days'");
    List<Long> young = events(2, "now()");

    List<Map<String, Object>> looks = new ArrayList<>();
    long after = 0;
    Map<String, Object> look;
    do { // as retention's loop, in batches of 2
      look = Sql.rows(ordertimeout.store.Sql.DELETE_DELIVERED_EVENTS.replace("$1", "24").replace("$2", "2")
          .replace("$3", "false").replace("$4", Long.toString(after))).get(0);
      looks.add(look);
      after = ((Number) look.get("up_to")).longValue();
    } while ((Boolean) look.get("more") && looks.size() < 10);

    assertThat(looks.stream().mapToLong(row -> ((Number) row.get("deleted")).longValue()).sum())
        .as("the delivered events behind the five a webhook lacks: %s", looks).isEqualTo(delivered.size());
    assertThat(after).as("looked up to the last old event, before the young ones").isEqualTo(delivered.get(2));
    assertThat(Sql.count("SELECT count(*) FROM outbox")).as("the failed ones wait for the maximum age, the young ones")
        .isEqualTo(failed.size() + young.size());
    Map<String, Object> next = Sql.rows(ordertimeout.store.Sql.DELETE_DELIVERED_EVENTS.replace("$1", "24")
        .replace("$2", "2").replace("$3", "false").replace("$4", Long.toString(after))).get(0);
    assertThat(next).as("the next look starts after them: nothing old, nothing more").containsEntry("more", false)
        .containsEntry("up_to", after);
  }

  /** {@code count} events created at {@code at}, each with its feed position; their ids. */
  private static List<Long> events(int count, String at) {
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      long id = Sql.count("INSERT INTO outbox (order_id, client, type, payload, created_at) "
          + "VALUES (1, 'client-a', 'ORDER_CREATED', '{}', %s) RETURNING event_id".formatted(at));
      Sql.position(id, id);
      ids.add(id);
    }
    return ids;
  }

  /** Events, log lines and idempotency keys number {@code from} to {@code to}, written at {@code at}. */
  private static void write(String generation, int from, int to, String at) {
    Sql.execute("""
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT n, 'client-a', 'ORDER_CREATED', jsonb_build_object('orderId', n::text), %s
        FROM generate_series(?, ?) AS n""".formatted(at), from, to);
    Sql.execute("INSERT INTO order_log (order_id, event, at) SELECT n, 'CREATED', %s FROM generate_series(?, ?) AS n"
        .formatted(at), from, to);
    Sql.execute("""
        INSERT INTO idempotency_keys (client, key, request_hash, response_status, response_body, order_id, created_at)
        SELECT 'client-a', ? || n, 'hash', 201, '{}', n, %s FROM generate_series(?, ?) AS n""".formatted(at),
        generation + "-", from, to);
  }

  private static void deleteAsRetentionWould(Map<String, String> passes) {
    passes.forEach((pass, statement) -> {
      for (int round = 0; round < 1_000 && Sql.count("SELECT count(*) FROM " + table(pass) + " WHERE "
          + (pass.equals("log lines") ? "at" : "created_at") + " < now() - interval '2 days'") > 0; round++) {
        Sql.execute(statement.replace("$2", "10000"));
      }
    });
    TABLES.forEach(table -> assertThat(Sql.count("SELECT count(*) FROM " + table)).as(table).isEqualTo(KEPT));
  }

  private static String table(String pass) {
    return switch (pass) {
      case "events" -> "outbox";
      case "log lines" -> "order_log";
      default -> "idempotency_keys";
    };
  }

  private static long pages(String table) {
    return Sql.count("SELECT pg_relation_size(?::regclass) / 8192", table);
  }
}
