package ordertimeout.maintenance;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import ordertimeout.clock.WallClock;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.metrics.Meters;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderIds;
import ordertimeout.store.OrderPartitions;
import ordertimeout.store.StatusCache;
import ordertimeout.support.Invariants;
import ordertimeout.support.LogCapture;
import ordertimeout.support.Sql;
import ordertimeout.support.StatementsUnderLock;
import ordertimeout.support.StockLedger;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static java.util.stream.Collectors.joining;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The partitions job (PartitionsVerticle) on the real database: past days get partitions of their own (the test
 * reshapes the layout the migration made: one floor below today), orders are seeded into some of them, and a run
 * takes out the old partitions whose orders are all finished, keeps the one with an unpaid order and the recent ones,
 * leaves no gap below the newest partition, and creates the days ahead.
 */
class PartitionsJobTest {
  private static final long DAY = 86_400_000L;
  private static final String SKU = "SKU-PART";

  private Vertx vertx;
  private Pool pool;
  private OrderPartitions partitions;
  private long today;

  @BeforeEach
  void pastDaysWithPartitions() throws Exception {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    pool = PgBuilder.pool().with(new PoolOptions().setMaxSize(2)).connectingTo(TestDatabase.connectOptions()).using(vertx).build();
    partitions = new OrderPartitions(pool, 5000, StatusCache.OFF);
    today = OrderPartitions.dayStart(System.currentTimeMillis());
    // every partition below today (empty after the reset) out; a floor below day -45 and one partition per day up to today
    StringBuilder layout = new StringBuilder(); // one round trip: 92 statements
    for (String table : List.of(OrderPartitions.ORDERS, OrderPartitions.ITEMS)) {
      layout.append(dropBelow(await(partitions.list(table)), table, today));
      layout.append(createPartition(table, Long.MIN_VALUE, OrderIds.firstIdAt(day(-45))));
      for (int d = -45; d < 0; d++) {
        layout.append(createPartition(table, OrderIds.firstIdAt(day(d)), OrderIds.firstIdAt(day(d + 1))));
      }
    }
    Sql.execute(layout.toString());
  }

  @AfterEach
  void empty() {
    pool.close();
    vertx.close();
    TestDatabase.reset();
  }

  /**
   * The migration's layout back, one floor below today, for the classes after this one: every statement of theirs
   * that cannot prune would visit each of the empty daily partitions below today that the tests leave.
   */
  @AfterAll
  static void oneFloorBelowToday() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      Pool pool = PgBuilder.pool().with(new PoolOptions().setMaxSize(1)).connectingTo(TestDatabase.connectOptions())
          .using(vertx).build();
      OrderPartitions partitions = new OrderPartitions(pool, 5000, StatusCache.OFF);
      long today = OrderPartitions.dayStart(System.currentTimeMillis());
      StringBuilder layout = new StringBuilder();
      for (String table : List.of(OrderPartitions.ORDERS, OrderPartitions.ITEMS)) {
        List<OrderPartitions.Partition> all = await(partitions.list(table));
        // up to the lowest partition kept: today's, unless one spans midnight
        long floorTo = all.stream().filter(p -> p.to() > OrderIds.firstIdAt(today))
            .mapToLong(OrderPartitions.Partition::from).min().orElse(OrderIds.firstIdAt(today));
        if (floorTo != Long.MIN_VALUE) {
          layout.append(dropBelow(all, table, today));
          layout.append(createPartition(table, Long.MIN_VALUE, floorTo));
        }
      }
      if (!layout.isEmpty()) {
        Sql.execute(layout.toString());
      }
    } finally {
      vertx.close();
    }
  }

  /** Statements that detach and drop the {@code partitions} of {@code table} below {@code day} (empty ones). */
  private static String dropBelow(List<OrderPartitions.Partition> partitions, String table, long day) {
    StringBuilder statements = new StringBuilder();
    for (OrderPartitions.Partition p : partitions) {
      if (p.to() <= OrderIds.firstIdAt(day)) {
        statements.append("ALTER TABLE ").append(table).append(" DETACH PARTITION ").append(p.name()).append(";\n");
        statements.append("DROP TABLE ").append(p.name()).append(";\n");
      }
    }
    return statements.toString();
  }

  @Test
  void dropsOldFinishedPartitionsKeepsOneWithAnUnpaidOrderAndRecentOnesAndCreatesAhead() throws Exception {
    Sql.execute("INSERT INTO inventory (sku, available, reserved) VALUES (?, 1000, 2)", SKU);
    seed(-40, 0, "PAID", 3);
    seed(-40, 1, "CLOSED", 4);
    seed(-39, 0, "PAID", 5);
    seed(-38, 0, "UNPAID", 2); // an unpaid order 38 days old (its deadline extended): its day stays
    seed(-38, 1, "PAID", 1);
    seed(-36, 0, "CLOSED", 2);
    seed(-5, 0, "PAID", 7);    // recent
    long sold = 3 + 5 + 1 + 7;
    StockLedger.putIn(SKU, 1000 + 2 + sold);
    Invariants.assertHold();

    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    PartitionsVerticle job = new PartitionsVerticle(config(Map.of("OT_RETENTION_PARTITION_DAYS", "1")), TestDatabase.connectOptions(),
        new NodeStats(registry, TestDatabase.SHARDS, Duration.ofSeconds(60)), null, WallClock.SYSTEM, StatusCache.OFF);
    await(vertx.deployVerticle(job));
    assertThat(withoutAutosummarize()).as("the partitions this test made itself").isNotEmpty();
    OrderPartitions.Result result;
    try (LogCapture logs = LogCapture.start()) {
      result = await(job.maintain());
      assertThat(logs.events().stream().filter(e -> e.getLevel() == Level.INFO).map(ILoggingEvent::getFormattedMessage))
          .as("one INFO line per partition dropped")
          .anySatisfy(line -> assertThat(line).contains("dropped " + name(-40)).contains("2 finished orders and 2 items"))
          .anySatisfy(line -> assertThat(line).contains("dropped " + name(-39)).contains("1 finished orders and 1 items"))
          .anySatisfy(line -> assertThat(line).contains("dropped " + name(-36)));
    }

    assertThat(result.droppedNames()).containsExactlyInAnyOrder(name(-40), name(-39), name(-36));
    assertThat(result.dropped()).isEqualTo(3);
    assertThat(result.orders()).isEqualTo(4);
    assertThat(result.items()).isEqualTo(4);
    for (String table : List.of(OrderPartitions.ORDERS, OrderPartitions.ITEMS)) {
      String kept = OrderPartitions.name(table, OrderIds.firstIdAt(day(-38)));
      assertThat(exists(kept)).as(kept + ", which holds an unpaid order").isTrue();
      assertThat(exists(OrderPartitions.name(table, OrderIds.firstIdAt(day(-5))))).as("a recent day").isTrue();
      assertThat(exists(OrderPartitions.name(table, OrderIds.firstIdAt(day(-29))))).as("a day within the window").isTrue();
      for (int d = 0; d <= 3; d++) {
        assertThat(exists(OrderPartitions.name(table, OrderIds.firstIdAt(day(d))))).as(table + " day " + d + " ahead").isTrue();
      }
      // below day -38: one empty floor; days -37 to -31: one empty filler; no gap anywhere
      List<OrderPartitions.Partition> now = await(partitions.list(table));
      assertThat(now.get(0)).isEqualTo(new OrderPartitions.Partition(table + "_p_floor", Long.MIN_VALUE, OrderIds.firstIdAt(day(-38))));
      assertThat(now.get(2)).isEqualTo(new OrderPartitions.Partition(OrderPartitions.name(table, OrderIds.firstIdAt(day(-37))),
          OrderIds.firstIdAt(day(-37)), OrderIds.firstIdAt(day(-30))));
      for (int i = 1; i < now.size(); i++) {
        assertThat(now.get(i).from()).as("no gap below " + now.get(i).name()).isEqualTo(now.get(i - 1).to());
      }
    }
    assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(3);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM pg_namespace WHERE nspname = 'orders_archive'")).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM pg_tables WHERE schemaname = 'orders_archive'")).as("archive: none").isZero();
    assertThat(registry.get(Meters.PARTITIONS_DROPPED).tag("archived", "false").counter().count()).isEqualTo(3);
    assertThat(registry.get(Meters.RETENTION_DELETED).tag("table", "orders").counter().count()).isEqualTo(4);
    assertThat(withoutAutosummarize()).as("partitions whose index by creation time would not summarize as it fills")
        .isEmpty();

    // the sales of the dropped PAID orders left the database with them
    StockLedger.putIn(SKU, -(3 + 5));
    Invariants.assertHold();

    assertThat(await(job.maintain()).dropped()).as("a second run finds nothing more to take out").isZero();
    assertThat(await(partitions.list(OrderPartitions.ORDERS))).hasSize(await(partitions.list(OrderPartitions.ITEMS)).size());
  }

  @Test
  void archivesToTheArchiveSchemaWhenConfigured() throws Exception {
    Sql.execute("INSERT INTO inventory (sku, available, reserved) VALUES (?, 1000, 0)", SKU);
    seed(-40, 0, "PAID", 3);
    StockLedger.putIn(SKU, 1003);
    PartitionsVerticle job = new PartitionsVerticle(config(Map.of("OT_RETENTION_ARCHIVE", "table", "OT_RETENTION_PARTITION_DAYS", "1")),
        TestDatabase.connectOptions(),
        new NodeStats(new SimpleMeterRegistry(), TestDatabase.SHARDS, Duration.ofSeconds(60)), null, WallClock.SYSTEM, StatusCache.OFF);
    await(vertx.deployVerticle(job));
    assertThat(await(job.maintain()).droppedNames()).containsExactly(name(-40));
    String archived = "orders_archive." + name(-40) + "_to_" + OrderPartitions.name("", OrderIds.firstIdAt(day(-39))).substring(2);
    assertThat(Sql.count("SELECT count(*) FROM " + archived)).as(archived).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM orders_archive." + OrderPartitions.name(OrderPartitions.ITEMS, OrderIds.firstIdAt(day(-40)))
        + "_to_" + OrderPartitions.name("", OrderIds.firstIdAt(day(-39))).substring(2))).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM orders")).isZero();
    Sql.execute("DROP SCHEMA orders_archive CASCADE");
    Sql.execute("CREATE SCHEMA orders_archive");
  }

  /**
   * The counts of a partition's rows (for the log and the metrics) read it whole, so they run before the detach:
   * while the detach's ACCESS EXCLUSIVE lock on orders and order_items is held, every statement on orders waits. Every
   * statement the job sends while some session holds that lock is recorded with its plan: none counts rows, none reads
   * a partition holding rows sequentially (the unpaid check reads the partial index of unpaid orders), and the counts
   * still reach the result.
   */
  @Test
  void countsRowsBeforeTheDetachAndReadsNoPartitionWholeUnderItsLock() throws Exception {
    long from = OrderIds.firstIdAt(day(-40));
    String items = OrderPartitions.name(OrderPartitions.ITEMS, from);
    Sql.execute("""
        INSERT INTO orders (id, shard, client, user_id, category, status, close_reason, created_at, close_at, paid_at,
                            closed_at)
        SELECT ? + n * 4096, n % 64, 'client-p', 'user-' || (n % 500), 'physical',
               (ARRAY['PAID', 'CLOSED'])[n % 2 + 1], CASE WHEN n % 2 = 1 THEN 'ADMIN' END, to_timestamp(? / 1000.0),
               to_timestamp(? / 1000.0) + interval '30 minutes', CASE WHEN n % 2 = 0 THEN to_timestamp(? / 1000.0) END,
               CASE WHEN n % 2 = 1 THEN to_timestamp(? / 1000.0) END
        FROM generate_series(1, 20000) AS n""", from, day(-40), day(-40), day(-40), day(-40));
    Sql.execute("INSERT INTO order_items (order_id, sku, qty) SELECT ? + n * 4096, 'SKU-' || (n % 100), 1 "
        + "FROM generate_series(1, 20000) AS n", from);
    Sql.execute("ANALYZE " + name(-40)); // as autovacuum has analyzed a partition a month old
    Sql.execute("ANALYZE " + items);

    OrderPartitions.Result result;
    List<StatementsUnderLock.Sent> sent;
    try (StatementsUnderLock watch = new StatementsUnderLock()) {
      result = await(new OrderPartitions(watch.wrap(pool), 5000, StatusCache.OFF).dropFinished(day(-30), false));
      sent = watch.sent();
    }

    assertThat(result.partitions()).containsExactly(new OrderPartitions.Dropped(name(-40), 20_000, 20_000));
    String all = sent.stream().map(s -> (s.underLock() ? "LOCKED " : "       ") + s.sql()).collect(joining("\n"));
    List<StatementsUnderLock.Sent> underLock = sent.stream().filter(StatementsUnderLock.Sent::underLock).toList();
    assertThat(underLock).as("the detaches, seen under their lock:\n" + all)
        .anySatisfy(s -> assertThat(s.sql()).contains("DETACH PARTITION \"" + name(-40) + "\""));
    assertThat(sent).as("the rows counted before the lock:\n" + all).filteredOn(s -> !s.underLock())
        .anySatisfy(s -> assertThat(s.sql()).containsIgnoringCase("count(*)").contains(name(-40)));
    for (StatementsUnderLock.Sent s : underLock) {
      assertThat(s.sql()).as("sent under the lock:\n" + all).doesNotContainIgnoringCase("count(");
      if (s.plan() != null) {
        assertThat(s.plan()).as(s.sql() + "\n" + s.plan())
            .doesNotContain("Seq Scan on " + name(-40)).doesNotContain("Seq Scan on " + items);
      }
    }
    assertThat(underLock).as("the unpaid check, planned:\n" + all)
        .anySatisfy(s -> assertThat(s.plan()).contains("Index").contains(name(-40)));
  }

  @Test
  void createsWeekLongPartitionsAheadByDefault() throws Exception {
    AppConfig config = config(Map.of("OT_RETENTION_PARTITIONS_AHEAD", "30"));
    assertThat(config.retention().partitions().partitionDays()).as("the default width").isEqualTo(7);
    List<OrderPartitions.Partition> before = await(partitions.list(OrderPartitions.ORDERS));
    PartitionsVerticle job = new PartitionsVerticle(config, TestDatabase.connectOptions(),
        new NodeStats(new SimpleMeterRegistry(), TestDatabase.SHARDS, Duration.ofSeconds(60)), null, WallClock.SYSTEM, StatusCache.OFF);
    await(vertx.deployVerticle(job));
    await(job.maintain());

    long week = OrderIds.firstIdAt(day(7)) - OrderIds.firstIdAt(day(0));
    for (String table : List.of(OrderPartitions.ORDERS, OrderPartitions.ITEMS)) {
      List<OrderPartitions.Partition> now = await(partitions.list(table));
      long top = before.get(before.size() - 1).to();
      List<OrderPartitions.Partition> created = now.stream().filter(p -> p.from() >= top).toList();
      assertThat(created).as(table + ": partitions created ahead of " + before.get(before.size() - 1).name()).hasSizeGreaterThanOrEqualTo(3);
      for (OrderPartitions.Partition p : created) {
        assertThat(p.to() - p.from()).as(p.name() + " spans a week").isEqualTo(week);
        assertThat(OrderPartitions.dayStart(OrderIds.millisOf(p.from()))).as(p.name() + " starts at 00:00 UTC").isEqualTo(OrderIds.millisOf(p.from()));
      }
      assertThat(now.get(now.size() - 1).to()).as("ids of 30 days ahead have a partition").isGreaterThan(OrderIds.firstIdAt(day(30)));
      for (int i = 1; i < now.size(); i++) {
        assertThat(now.get(i).from()).as("no gap below " + now.get(i).name()).isEqualTo(now.get(i - 1).to());
      }
    }
  }

  /** One order of {@code status} on day {@code d} ({@code n}: its place that day) with {@code qty} of the SKU, and its log and events. */
  private void seed(int d, int n, String status, int qty) {
    long id = OrderIds.firstIdAt(day(d) + 3_600_000L) + n;
    Sql.execute("""
        INSERT INTO orders (id, shard, client, user_id, category, status, close_reason, created_at, close_at, paid_at, closed_at)
        VALUES (?, ?, 'client-p', 'user-p', 'physical', ?, CASE WHEN ? = 'CLOSED' THEN 'ADMIN' END, to_timestamp(? / 1000.0),
                CASE WHEN ? = 'UNPAID' THEN now() + interval '1 day' ELSE to_timestamp(? / 1000.0) + interval '30 minutes' END,
                CASE WHEN ? = 'PAID' THEN to_timestamp(? / 1000.0) + interval '1 minute' END,
                CASE WHEN ? = 'CLOSED' THEN to_timestamp(? / 1000.0) + interval '2 minutes' END)""",
        id, OrderIds.shardOf(id, TestDatabase.SHARDS), status, status, OrderIds.millisOf(id), status, OrderIds.millisOf(id),
        status, OrderIds.millisOf(id), status, OrderIds.millisOf(id));
    Sql.execute("INSERT INTO order_items (order_id, sku, qty) VALUES (?, ?, ?)", id, SKU, qty);
    if (!status.equals("UNPAID")) {
      Sql.execute("INSERT INTO order_log (order_id, event) VALUES (?, ?)", id, status);
      Sql.execute("INSERT INTO outbox (order_id, type, payload, client) VALUES (?, ?, '{}'::jsonb, 'client-p')", id, "ORDER_" + status);
    }
  }

  private static AppConfig config(Map<String, String> overrides) {
    Map<String, String> environment = new HashMap<>(overrides);
    environment.put("OT_DATABASE_URL", TestDatabase.url());
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
  }

  private long day(int d) {
    return today + d * DAY;
  }

  private String name(int d) {
    return OrderPartitions.name(OrderPartitions.ORDERS, OrderIds.firstIdAt(day(d)));
  }

  private static boolean exists(String table) {
    return Sql.count("SELECT count(*) FROM pg_class WHERE oid = to_regclass(?)", table) == 1;
  }

  /** Partitions' indexes of orders_by_created_time without autosummarize (V27), which the job sets on each it finds. */
  private static List<Object> withoutAutosummarize() {
    return Sql.rows("""
        SELECT h.inhrelid::regclass::text AS index FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
        WHERE h.inhparent = 'orders_by_created_time'::regclass
          AND NOT coalesce('autosummarize=on' = ANY (c.reloptions), false)""")
        .stream().map(row -> row.get("index")).toList();
  }

  private static String createPartition(String table, long from, long to) {
    return "CREATE TABLE " + OrderPartitions.name(table, from) + " PARTITION OF " + table + " FOR VALUES FROM ("
        + (from == Long.MIN_VALUE ? "MINVALUE" : Long.toString(from)) + ") TO (" + to + ");\n";
  }

  private static <T> T await(Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }
}
