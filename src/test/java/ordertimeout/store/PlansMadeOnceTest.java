package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import ordertimeout.clock.WallClock;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.order.CreateOutcome;
import ordertimeout.order.CreateRequest;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.NewOrder;
import ordertimeout.order.OrderIds;
import ordertimeout.order.OrderItem;
import ordertimeout.support.AutoExplain;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The statements planned once per session (functions with force_generic_plan: the status read, order_view of migration
 * V13, a create group's per-user count, unpaid_of_users of V17, its insert, create_orders of V19, the pay group's
 * statement, pay_orders of V21, and the close batch's, close_due_orders of V22; and every statement of a create group
 * and the dispatcher's statement, under the transaction's setting of decision 0038). A plan made while the orders'
 * partitions were empty must still find orders through an index once they fill, never by reading a partition whole; the
 * count must probe each user by key, the read, the pay and the close their orders and items by primary key (on
 * partitions analyzed while empty the read took search indexes that hold the id later on, a whole index a read, until
 * V20), the insert, the pay and the close each SKU's stock. Each test makes the session's plan on empty tables, fills
 * them from another session, and reads the plan of the next call from auto_explain, sent to this session as notices.
 */
class PlansMadeOnceTest {
  private static final int ORDERS = 20_000;

  private long firstId;

  /**
   * The partitions analyzed while empty (decision 0007), and only so: other classes' orders leave statistics that an
   * emptied table keeps. In the floor partition (small ids go there) an old correlation of the status column, with no
   * pages left, made the status index cost less than the unpaid one (CI, 2026-12-03). The service never empties a
   * partition (the maintenance job drops it whole), so those statistics go before the ANALYZE.
   */
  @BeforeEach
  void emptyAndAnalyzed() {
    TestDatabase.reset();
    Sql.execute("""
        DELETE FROM pg_statistic
        WHERE starelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent IN ('orders'::regclass, 'order_items'::regclass))
           OR starelid IN ('orders'::regclass, 'order_items'::regclass)""");
    Sql.execute("ANALYZE orders");
    Sql.execute("ANALYZE order_items");
    firstId = Sql.count("SELECT order_id_at(now())"); // in today's partition
  }

  @AfterEach
  void empty() {
    TestDatabase.reset();
  }

  /** Orders firstId + 1 .. firstId + ORDERS, unpaid, of client-a's users user-1 .. user-ORDERS, 2 of SKU-1 each. */
  private void fillTodaysPartition() {
    Sql.execute("""
        INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
        SELECT ?::bigint + n, n % 64, 'client-a', 'user-' || n, 'physical', 'UNPAID', now(), now() + interval '1 hour'
        FROM generate_series(1, ?) AS n""", firstId, ORDERS);
    Sql.execute("INSERT INTO order_items (order_id, sku, qty) SELECT ?::bigint + n, 'SKU-1', 2 FROM generate_series(1, ?) AS n",
        firstId, ORDERS);
  }

  @Test
  void aReadPlannedOnEmptyTablesFindsItsOrderByPrimaryKeyOnceTheyFill() throws SQLException {
    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      statement.execute("SELECT * FROM order_view(1, NULL)"); // the session's plan, made on empty partitions
      fillTodaysPartition();
      long wanted = firstId + ORDERS;
      AutoExplain.sendPlansAsNotices(statement);
      try (ResultSet read = statement.executeQuery("SELECT * FROM order_view(" + wanted + ", 'client-a')")) {
        assertThat(read.next()).as("the order read").isTrue();
        assertThat(read.getString("status")).isEqualTo("UNPAID");
        assertThat((Integer[]) read.getArray("qtys").getArray()).containsExactly(2);
      }
      String plan = AutoExplain.plansMentioning(statement.getWarnings(), "JOIN order_items");
      assertThat(plan).as("the read's plan, as auto_explain sent it").contains("FROM orders o JOIN order_items i");
      assertThat(plan).as("orders and items found through an index in every partition").contains("Index Scan").doesNotContain("Seq Scan");
      String orders = partitionOf("orders", "id", wanted);
      String items = partitionOf("order_items", "order_id", wanted);
      assertThat(plan).as("today's order and its items by primary key, not by a search index with the id later on")
          .contains("Index Scan using " + orders + "_pkey on " + orders)
          .contains("Index Scan using " + items + "_pkey on " + items);
    }
  }

  /** The partition of {@code table} that holds the row whose {@code idColumn} is {@code id}. */
  private static String partitionOf(String table, String idColumn, long id) {
    return Sql.rows("SELECT tableoid::regclass::text AS partition FROM " + table + " WHERE " + idColumn + " = ?", id)
        .get(0).get("partition").toString();
  }

  @Test
  void aPerUserCountPlannedOnEmptyTablesLooksEachUserUpOnceTheyFill() throws SQLException {
    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      // the session's plan, made on empty partitions
      statement.execute("SELECT * FROM unpaid_of_users('{client-a}', '{user-1}')");
      fillTodaysPartition();
      // user-1 has two more orders, one of them paid; user-2 of client-b (client-a's user-2 has one) has none
      Sql.execute("""
          INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at, paid_at)
          VALUES (?::bigint + ? + 1, 1, 'client-a', 'user-1', 'physical', 'UNPAID', now(), now() + interval '1 h', NULL),
                 (?::bigint + ? + 2, 1, 'client-a', 'user-1', 'physical', 'PAID', now(), now() + interval '1 h', now())""",
          firstId, ORDERS, firstId, ORDERS);
      AutoExplain.sendPlansAsNotices(statement);
      Map<String, Long> unpaid = new HashMap<>();
      try (ResultSet counts = statement.executeQuery(
          "SELECT * FROM unpaid_of_users('{client-a,client-b,client-a}', '{user-1,user-2,user-" + ORDERS + "}')")) {
        while (counts.next()) {
          unpaid.put(counts.getString("client") + "/" + counts.getString("user_id"), counts.getLong("unpaid"));
        }
      }
      assertThat(unpaid).containsOnly(Map.entry("client-a/user-1", 2L), Map.entry("client-b/user-2", 0L),
          Map.entry("client-a/user-" + ORDERS, 1L));
      String plan = AutoExplain.plansMentioning(statement.getWarnings(), "count(*) FROM orders o");
      assertThat(plan).as("the count's plan, as auto_explain sent it").contains("FROM unnest(clients, user_ids)");
      long partitions = Sql.count("SELECT count(*) FROM pg_inherits WHERE inhparent = 'orders'::regclass");
      assertThat(plan.split(Pattern.quote("Index Cond: ((client = u.client) AND (user_id = u.user_id))"), -1))
          .as("each user's orders found by their key in every partition (%d)", partitions).hasSize((int) partitions + 1);
      assertThat(plan).as("by the index of unpaid orders only, without reading a partition whole")
          .doesNotContain("Seq Scan").doesNotContain("by_client_user").doesNotContain("client_user_id_id_idx");
    }
  }

  /**
   * The insert's plan made while the inventory held one SKU; then the shop loads 20,000 more. Without
   * {@code enable_seqscan = off} the plan joined a hash of the whole inventory, read on every call. Also what it
   * writes: an order whose id is taken inserts nothing, and the event of a new order is the payload every other event
   * writes ({@code Sql.eventPayload}), which the function copies.
   */
  @Test
  void anInsertPlannedOnASmallInventoryFindsEachSkuByKeyOnceItGrows() throws SQLException {
    Sql.execute("INSERT INTO inventory (sku, available) VALUES ('SKU-0', 100)");
    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      // the session's plan, on an inventory of one SKU
      statement.execute("""
          SELECT * FROM create_orders(ARRAY[%d], ARRAY[1], ARRAY['client-a'], ARRAY['user-1'], ARRAY['physical'],
                                      ARRAY[600], ARRAY[60], ARRAY[%1$d]::bigint[], ARRAY['SKU-0'], ARRAY[1])"""
          .formatted(firstId + 1));
      Sql.execute("INSERT INTO inventory (sku, available) SELECT 'SKU-' || n, 100 FROM generate_series(1, 20000) AS n");
      AutoExplain.sendPlansAsNotices(statement);
      List<Long> created = new ArrayList<>();
      try (ResultSet rows = statement.executeQuery("""
          SELECT * FROM create_orders(ARRAY[%d, %d], ARRAY[1, 2], ARRAY['client-a', 'client-a'],
                                      ARRAY['user-1', 'user-2'], ARRAY['physical', 'physical'], ARRAY[600, 600],
                                      ARRAY[NULL, 60],
                                      ARRAY[%1$d, %2$d]::bigint[], ARRAY['SKU-0', 'SKU-7'], ARRAY[5, 3])"""
          .formatted(firstId + 1, firstId + 2))) {
        while (rows.next()) {
          created.add(rows.getLong("id"));
        }
      }
      String plan = AutoExplain.plansMentioning(statement.getWarnings(), "UPDATE inventory");
      assertThat(plan).as("the insert's plan, as auto_explain sent it").contains("INSERT INTO orders");
      assertThat(plan).as("each SKU's stock found by key, the inventory never read whole")
          .contains("Index Scan using inventory_pkey").doesNotContain("Seq Scan");
      assertThat(created).as("only the order whose id was free").containsExactly(firstId + 2);
    }
    assertThat(Sql.rows("SELECT sku, available, reserved FROM inventory WHERE sku IN ('SKU-0', 'SKU-7') ORDER BY sku"))
        .as("the taken id's items reserve nothing").containsExactly(
            Map.of("sku", "SKU-0", "available", 99L, "reserved", 1L),
            Map.of("sku", "SKU-7", "available", 97L, "reserved", 3L));
    assertThat(eventIsThePayloadEveryEventWrites(firstId + 2, "ORDER_CREATED"))
        .as("the new order's event, as every event writes an order").isTrue();
  }

  /**
   * The pay group's plan made on empty partitions and a one-SKU inventory; then the partitions fill and the shop loads
   * 20,000 more SKUs. Each order, and its items, must be found by today's primary keys (not by an index that holds the
   * id in a later column, decision 0007's first try of this function), each SKU's count of units paid by key, the
   * inventory rows not at all (V23). Also what it does:
   * an order given twice is paid once, one of another client is not paid, an admin's (no client) is; stock is sold
   * for what was paid only; the event of a pay is the payload every other event writes ({@code Sql.eventPayload}).
   */
  @Test
  void aPayGroupPlannedOnEmptyTablesFindsItsOrdersAndStockByKeyOnceTheyFill() throws SQLException {
    Sql.execute("INSERT INTO inventory (sku, available) VALUES ('SKU-0', 100)");
    long twice = firstId + ORDERS;
    long ofAnotherClient = firstId + ORDERS - 1;
    long byAnAdmin = firstId + 1;
    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      statement.execute("SELECT * FROM pay_orders(ARRAY[1], ARRAY['client-a'])"); // the session's plan, on empty tables
      fillTodaysPartition();
      Sql.execute("INSERT INTO inventory (sku, available, reserved) VALUES ('SKU-1', 0, ?)", 2 * ORDERS);
      Sql.execute("INSERT INTO inventory (sku, available) SELECT 'SKU-' || n, 100 FROM generate_series(2, 20000) AS n");
      AutoExplain.sendPlansAsNotices(statement);
      Map<Long, String> paid = new HashMap<>();
      try (ResultSet rows = statement.executeQuery("SELECT * FROM pay_orders(ARRAY[%d, %d, %d, %d], "
          .formatted(twice, twice, ofAnotherClient, byAnAdmin) + "ARRAY['client-a', 'client-a', 'client-b', NULL])")) {
        while (rows.next()) {
          List<Object> skus = List.of((Object[]) rows.getArray("skus").getArray());
          List<Object> qtys = List.of((Object[]) rows.getArray("qtys").getArray());
          paid.put(rows.getLong("id"), rows.getString("status") + " " + skus + qtys);
        }
      }
      assertThat(paid).as("the orders paid, as the function returns them")
          .containsOnly(Map.entry(twice, "PAID [SKU-1][2]"), Map.entry(byAnAdmin, "PAID [SKU-1][2]"));
      String plan = AutoExplain.plansMentioning(statement.getWarnings(), "INSERT INTO inventory_paid");
      assertThat(plan).as("the pay's plan, as auto_explain sent it").contains("UPDATE orders o SET status = 'PAID'");
      assertFindsByKey(plan, twice, "Conflict Arbiter Indexes: inventory_paid_pkey");
      assertThat(plan).as("the inventory rows left alone (V23)").doesNotContain("inventory_pkey");
    }
    assertThat(Sql.rows("SELECT available, reserved FROM stock WHERE sku = 'SKU-1'"))
        .as("the two orders paid sold their reservation")
        .containsExactly(Map.of("available", 0L, "reserved", 2L * ORDERS - 4));
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID'")).isEqualTo(2);
    assertThat(eventIsThePayloadEveryEventWrites(twice, "ORDER_PAID"))
        .as("the pay's event, as every event writes an order").isTrue();
  }

  /**
   * The close batch's plan made on empty partitions and a one-SKU inventory; then the partitions fill and the shop
   * loads 20,000 more SKUs. Each order, and its items, must be found by today's primary keys, each SKU's stripe of
   * given-back units by key, the inventory rows not at all (V24). Also
   * what it does: of four orders, the two due are closed, a parked one (due too) and one not due are left; their stock
   * goes back; the event of a close is the payload every other event writes ({@code Sql.eventPayload}).
   */
  @Test
  void aCloseBatchPlannedOnEmptyTablesFindsItsOrdersAndStockByKeyOnceTheyFill() throws SQLException {
    Sql.execute("INSERT INTO inventory (sku, available) VALUES ('SKU-0', 100)");
    long due = firstId + ORDERS;
    long alsoDue = firstId + 1;
    long parked = firstId + 2;
    long notDue = firstId + 3;
    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      statement.execute("SELECT * FROM close_due_orders(ARRAY[1], 'TIMEOUT')"); // the session's plan, on empty tables
      fillTodaysPartition();
      Sql.execute("UPDATE orders SET close_at = now() - interval '1 second' WHERE id IN (?, ?, ?)",
          due, alsoDue, parked);
      Sql.execute("INSERT INTO close_failures (order_id, failures, first_failed_at, last_failed_at, last_error, "
          + "parked_at) VALUES (?, 3, now(), now(), 'lock timeout', now())", parked);
      Sql.execute("INSERT INTO inventory (sku, available, reserved) VALUES ('SKU-1', 0, ?)", 2 * ORDERS);
      Sql.execute("INSERT INTO inventory (sku, available) SELECT 'SKU-' || n, 100 FROM generate_series(2, 20000) AS n");
      AutoExplain.sendPlansAsNotices(statement);
      List<Long> closed = new ArrayList<>();
      try (ResultSet rows = statement.executeQuery("SELECT * FROM close_due_orders(ARRAY[%d, %d, %d, %d], 'TIMEOUT')"
          .formatted(due, alsoDue, parked, notDue))) {
        while (rows.next()) {
          closed.add(rows.getLong("id"));
        }
      }
      assertThat(closed).as("the due orders, not the parked one nor the one not due")
          .containsExactlyInAnyOrder(due, alsoDue);
      String plan = AutoExplain.plansMentioning(statement.getWarnings(), "INSERT INTO inventory_released");
      assertThat(plan).as("the close's plan, as auto_explain sent it")
          .contains("UPDATE orders o SET status = 'CLOSED'");
      assertFindsByKey(plan, due, "Conflict Arbiter Indexes: inventory_released_pkey");
      assertThat(plan).as("the inventory rows left alone (V24)").doesNotContain("inventory_pkey");
    }
    assertThat(Sql.rows("SELECT available, reserved FROM stock WHERE sku = 'SKU-1'"))
        .as("the two orders closed gave their reservation back")
        .containsExactly(Map.of("available", 4L, "reserved", 2L * ORDERS - 4));
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED' AND close_reason = 'TIMEOUT'"))
        .isEqualTo(2);
    assertThat(eventIsThePayloadEveryEventWrites(due, "ORDER_CLOSED"))
        .as("the close's event, as every event writes an order").isTrue();
  }

  /**
   * The dispatcher's statement planned once (decision 0038) on empty tables, with a webhook to deliver to; then the
   * partitions fill and 100 of their orders' events wait. Each event, its feed position and its order (for the
   * delivery's shard) must be found by primary key, no table read whole, and the plan made once run both times.
   */
  @Test
  void aDispatchPlannedOnEmptyTablesFindsEachEventAndItsOrderByKeyOnceTheyFill() throws SQLException {
    String dispatch = "EXECUTE dispatch(1000, ARRAY['http://127.0.0.1:9/events'], ARRAY[''], ARRAY[''])";
    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      session.setAutoCommit(false);
      statement.execute("PREPARE dispatch AS " + ordertimeout.store.Sql.DISPATCH_EVENTS);
      statement.execute(ordertimeout.store.Sql.PLAN_ONCE_PER_SESSION);
      statement.execute(dispatch); // the session's plan, on empty tables
      session.commit();
      fillTodaysPartition();
      long last = firstId + ORDERS;
      Sql.execute("""
          INSERT INTO outbox (order_id, client, type, payload)
          SELECT id, client, 'ORDER_CREATED', '{}' FROM orders WHERE id > ? ORDER BY id""", last - 100);
      AutoExplain.sendPlansAsNotices(statement);
      statement.execute(ordertimeout.store.Sql.PLAN_ONCE_PER_SESSION);
      try (ResultSet counts = statement.executeQuery(dispatch)) {
        assertThat(counts.next()).isTrue();
        assertThat(counts.getLong("positioned")).as("every waiting event positioned").isEqualTo(100);
      }
      String plan = AutoExplain.plansMentioning(statement.getWarnings(), "INSERT INTO webhook_deliveries");
      String orders = partitionOf("orders", "id", last);
      assertThat(plan).as("each event, its position and its order found by primary key, no table read whole but "
              + "the one row of the positions' counter")
          .containsPattern(byPrimaryKey("outbox")).contains("outbox_feed_pkey").containsPattern(byPrimaryKey(orders))
          .doesNotContainPattern("Seq Scan on (?!outbox_positions )");
      session.commit();
      try (ResultSet planned = statement.executeQuery(
          "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'dispatch'")) {
        assertThat(planned.next()).isTrue();
        assertThat(planned.getLong("generic_plans") + " generic, " + planned.getLong("custom_plans") + " custom")
            .as("the plan made once, run both times").isEqualTo("2 generic, 0 custom");
      }
    }
    assertThat(Sql.count("SELECT count(*) FROM webhook_deliveries d JOIN orders o ON o.id = d.order_id "
        + "WHERE d.shard = o.shard")).as("a delivery of each event, on its order's shard").isEqualTo(100);
  }

  /**
   * A create group's lookups, planned once per session under {@code Sql.PLAN_ONCE_PER_SESSION} (decision 0038) while
   * the inventory holds one SKU and no idempotency key or holding is stored; then the shop loads 20,000 SKUs, and
   * 20,000 keys and the holdings of 2,000 clients are stored. The next group must run the plans made then, and they
   * must find each key, each client's holdings, each SKU's row and its given-back units by primary key, never reading
   * a table whole.
   */
  @Test
  void aCreateGroupsLookupsPlannedOnSmallTablesFindTheirRowsByKeyOnceTheyGrow() throws SQLException {
    Sql.execute("INSERT INTO inventory (sku, available) VALUES ('SKU-0', 100)");
    Map<String, String> lookups = Map.of(
        "stored_keys", ordertimeout.store.Sql.SELECT_IDEMPOTENCY_KEYS,
        "holdings", ordertimeout.store.Sql.SELECT_CLIENT_HOLDINGS,
        "stock", ordertimeout.store.Sql.LOCK_STOCK_BY_SKU);
    Map<String, String> calls = Map.of(
        "stored_keys", "EXECUTE stored_keys(ARRAY['client-7', 'client-8'], ARRAY['key-7', 'key-8'])",
        "holdings", "EXECUTE holdings(ARRAY['client-7', 'client-8'])",
        "stock", "EXECUTE stock(ARRAY['SKU-0', 'SKU-7'])");
    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      session.setAutoCommit(false);
      for (Map.Entry<String, String> lookup : lookups.entrySet()) {
        statement.execute("PREPARE " + lookup.getKey() + " AS " + lookup.getValue());
      }
      statement.execute(ordertimeout.store.Sql.PLAN_ONCE_PER_SESSION);
      for (String call : calls.values()) { // the session's plans, on small tables
        statement.execute(call);
      }
      session.commit();
      Sql.execute("INSERT INTO inventory (sku, available) SELECT 'SKU-' || n, 100 FROM generate_series(1, 20000) AS n");
      Sql.execute("INSERT INTO inventory_released (sku, stripe, units) SELECT 'SKU-' || n, n % 16, 1 "
          + "FROM generate_series(1, 20000) AS n");
      Sql.execute("INSERT INTO idempotency_keys (client, key, request_hash, response_status, response_body) "
          + "SELECT 'client-' || n % 2000, 'key-' || n, 'hash', 201, '{}' FROM generate_series(1, 20000) AS n");
      Sql.execute("INSERT INTO client_holdings (client, stripe, unpaid, units) "
          + "SELECT 'client-' || n, 0, 1, 1 FROM generate_series(1, 2000) AS n");
      AutoExplain.sendPlansAsNotices(statement);
      statement.execute(ordertimeout.store.Sql.PLAN_ONCE_PER_SESSION);
      Map<String, String> plans = new HashMap<>();
      for (Map.Entry<String, String> call : calls.entrySet()) {
        statement.execute(call.getValue());
        plans.put(call.getKey(), AutoExplain.plansMentioning(statement.getWarnings(), "Query Text"));
        statement.clearWarnings();
      }
      session.commit();
      assertThat(plans.get("stored_keys")).as("each stored key found by key")
          .contains("idempotency_keys_pkey").doesNotContain("Seq Scan");
      assertThat(plans.get("holdings")).as("each client's holdings found by key")
          .contains("client_holdings_pkey").doesNotContain("Seq Scan");
      assertThat(plans.get("stock")).as("each SKU's row and its given-back units found by key")
          .contains("inventory_pkey").contains("inventory_released_pkey").doesNotContain("Seq Scan");
      try (ResultSet rows = statement.executeQuery(
          "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE from_sql")) {
        Map<String, String> planned = new HashMap<>();
        while (rows.next()) {
          planned.put(rows.getString("name"),
              rows.getLong("generic_plans") + " generic, " + rows.getLong("custom_plans") + " custom");
        }
        assertThat(planned).as("each lookup ran its plan made once, both times")
            .containsOnly(Map.entry("stored_keys", "2 generic, 0 custom"), Map.entry("holdings", "2 generic, 0 custom"),
                Map.entry("stock", "2 generic, 0 custom"));
      }
    }
  }

  /**
   * The service's create group runs every statement of its transaction on the session's plan made once (decision
   * 0038), from the first group on: none is planned again for its parameters.
   */
  @Test
  void aCreateGroupRunsEveryStatementOnThePlanMadeOnce() {
    Sql.execute("INSERT INTO inventory (sku, available) VALUES ('SKU-0', 100)");
    Vertx vertx = Vertx.vertx();
    try {
      Pool oneSession = Pools.shared(vertx, "plans-made-once-test", TestDatabase.connectOptions(), 1, 1,
          TestDatabase.databaseConfig(Map.of()).intake());
      OrderCreates creates = new OrderCreates(oneSession, Duration.ofSeconds(1), new LockedSkus(Duration.ofSeconds(3)),
          order -> {
            throw new IllegalStateException("no id is taken here");
          });
      AppConfig.Clients clients =
          AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), name -> null)).clients();
      OrderIds ids = new OrderIds(1001, WallClock.SYSTEM);
      for (int group = 1; group <= 2; group++) {
        long id = ids.next();
        NewOrder order = new NewOrder(id, OrderIds.shardOf(id, TestDatabase.SHARDS), "user-" + group, "physical",
            List.of(new OrderItem("SKU-0", 1)), 600, Optional.empty());
        CreateRequest request = new CreateRequest(order, new IdempotencyKey("dev-user", "key-" + group, "hash"),
            System.nanoTime() + TimeUnit.MINUTES.toNanos(1));
        List<Future<CreateOutcome>> answers = TestService.await(creates.create(List.of(request), 1000, clients));
        assertThat(TestService.await(answers.get(0)).order().id()).isEqualTo(id);
      }
      Map<String, String> planned = new HashMap<>();
      TestService.await(oneSession.query("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
          .execute()).forEach(row -> planned.put(row.getString("statement"),
          row.getLong("generic_plans") + " generic, " + row.getLong("custom_plans") + " custom"));
      for (String statement : List.of(ordertimeout.store.Sql.TRY_LOCK_IDEMPOTENCY_KEYS,
          ordertimeout.store.Sql.SELECT_IDEMPOTENCY_KEYS, ordertimeout.store.Sql.LOCK_USERS_AND_CLIENTS,
          ordertimeout.store.Sql.COUNT_UNPAID_OF_USERS, ordertimeout.store.Sql.SELECT_CLIENT_HOLDINGS,
          ordertimeout.store.Sql.LOCK_STOCK_BY_SKU, ordertimeout.store.Sql.INSERT_ORDERS,
          ordertimeout.store.Sql.INSERT_IDEMPOTENCY_KEYS)) {
        assertThat(planned.get(statement)).as("how the two groups planned: " + statement)
            .isEqualTo("2 generic, 0 custom");
      }
    } finally {
      TestService.await(vertx.close());
    }
  }

  /**
   * {@code plan} finds order {@code id} and its items by the primary keys of their partitions (an index scan, or a
   * bitmap of the key where the planner expects many rows) and the stock by inventory_pkey, reads no table whole, and
   * takes no index that holds the id in a later column.
   */
  private static void assertFindsByKey(String plan, long id, String stockByKey) {
    String orders = partitionOf("orders", "id", id);
    String items = partitionOf("order_items", "order_id", id);
    assertThat(plan).as("orders, items and stock found by primary key, no table read whole")
        .containsPattern(byPrimaryKey(orders)).containsPattern(byPrimaryKey(items))
        .contains(stockByKey).doesNotContain("Seq Scan");
    assertThat(plan).as("no index that holds the id in a later column")
        .doesNotContain("shard_close_at").doesNotContain("status_close_at").doesNotContain("client_user")
        .doesNotContain("sku_order_id");
  }

  private static String byPrimaryKey(String partition) {
    return "Index (Only )?Scan using " + partition + "_pkey on " + partition
        + "|Bitmap Index Scan on " + partition + "_pkey";
  }

  /** Whether order {@code id}'s event of {@code type} holds the order as {@code Sql.eventPayload} writes it now. */
  private static boolean eventIsThePayloadEveryEventWrites(long id, String type) {
    String same = "SELECT " + ordertimeout.store.Sql.eventPayload("o",
        "(SELECT jsonb_agg(jsonb_build_object('sku', i.sku, 'qty', i.qty) ORDER BY i.sku) FROM order_items i "
            + "WHERE i.order_id = o.id)") + " = e.payload AS same FROM orders o JOIN outbox e ON e.order_id = o.id "
        + "WHERE o.id = ? AND e.type = ?";
    return Sql.rows(same, id, type).equals(List.of(Map.of("same", true)));
  }
}
