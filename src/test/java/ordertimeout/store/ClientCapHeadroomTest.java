package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.clock.WallClock;
import ordertimeout.config.AppConfig;
import ordertimeout.config.AppConfig.ClientLimits;
import ordertimeout.config.ConfigSource;
import ordertimeout.order.CreateOutcome;
import ordertimeout.order.CreateRequest;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.NewOrder;
import ordertimeout.order.OrderIds;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A client's create groups run side by side while it is far from its caps, and its caps still hold exactly: groups of
 * two "nodes" with four connections each race a client up to its cap, with a small headroom (2 orders and 20 units a
 * group, so a margin of 30 orders and 300 units) so that the race crosses from side by side to one after another.
 * That no more than {@value CapHeadroom#SLOTS} groups of a client run at once rests on the slot locks, checked here by
 * holding them, not by racing that many.
 */
class ClientCapHeadroomTest extends ServiceTestBase {
  private static final String SKU = "HEADROOM";
  private static final CapHeadroom SMALL = new CapHeadroom(2, 20);
  private static final int UNPAID_CAP = 60;
  private static final int UNITS_CAP = 600;
  private static final String SHARED_LOCK = "SELECT pg_advisory_xact_lock_shared($1)";

  private final AtomicInteger users = new AtomicInteger();
  private final Map<Integer, OrderIds> idsByNode = new HashMap<>();
  private Vertx vertx;
  private AppConfig.Clients clients;

  @BeforeEach
  void startClients() {
    vertx = Vertx.vertx();
    AppConfig.Clients configured = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), name -> null)).clients();
    ClientLimits defaults = configured.defaults();
    clients = new AppConfig.Clients(defaults, Map.of(
        "orders-capped", new ClientLimits(UNPAID_CAP, 1_000_000, defaults.maxTimeoutSeconds(), 0, 0),
        "units-capped", new ClientLimits(100_000, UNITS_CAP, defaults.maxTimeoutSeconds(), 0, 0),
        "small", new ClientLimits(20, 1_000_000, defaults.maxTimeoutSeconds(), 0, 0)));
    api.setStock(SKU, 1_000_000);
  }

  @AfterEach
  void stopClients() {
    TestService.await(vertx.close());
  }

  @Test
  void groupsRacingAClientToItsUnpaidCapTakeExactlyTheCap() {
    List<Future<CreateOutcome>> answers = race("orders-capped", 1, 240);
    assertExactly(answers, UNPAID_CAP, Reason.CLIENT_UNPAID_CAP, "orders-capped");
    assertThat(Sql.count("SELECT sum(unpaid) FROM client_holdings WHERE client = 'orders-capped'")).isEqualTo(UNPAID_CAP);
  }

  @Test
  void groupsRacingAClientToItsUnitsCapTakeExactlyTheCap() {
    List<Future<CreateOutcome>> answers = race("units-capped", 10, 240);
    assertExactly(answers, UNITS_CAP / 10, Reason.CLIENT_UNITS_CAP, "units-capped");
    assertThat(Sql.count("SELECT sum(units) FROM client_holdings WHERE client = 'units-capped'")).isEqualTo(UNITS_CAP);
  }

  @Test
  void farFromItsCapsAGroupTakesTheClientsLockSharedAndASlotAndNearThemExclusive() {
    OrderCreates creates = creates(1001, 2);
    try (Holder holder = new Holder(SHARED_LOCK, OrderCreates.lockKey("client", "dev-user"))) {
      CreateOutcome created = TestService.await(TestService.await(creates.create(List.of(request(1001, "dev-user", 1)), 1000, clients)).get(0));
      assertThat(created.order().id()).as("created while another transaction holds the client's lock shared").isPositive();
    }
    // every slot of the client held elsewhere: the group waits for its connection's slot
    assertWaitsWhileHeld(creates, "dev-user", "SELECT pg_advisory_xact_lock(k) FROM generate_series($1::bigint, $1::bigint + "
        + (CapHeadroom.SLOTS - 1) + ") AS k", OrderCreates.slotLocksKey("dev-user"));
    // a cap of 20 is less than the margin of 30: the client's groups always take its lock exclusive
    assertWaitsWhileHeld(creates, "small", SHARED_LOCK, OrderCreates.lockKey("client", "small"));
  }

  @Test
  void aClientThatCameNearItsCapTakesItsLockExclusiveFromItsNextGroupOn() {
    OrderCreates creates = creates(1001, 2);
    List<CreateRequest> first = new ArrayList<>();
    for (int i = 0; i < 29; i++) {
      first.add(request(1001, "orders-capped", 1));
    }
    TestService.await(creates.create(first, 1000, clients)).forEach(TestService::await);
    // 29 held + 2 for a group + a margin of 30 pass the cap of 60: the next group goes exclusive at once
    assertWaitsWhileHeld(creates, "orders-capped", SHARED_LOCK, OrderCreates.lockKey("client", "orders-capped"));
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE client = 'orders-capped'")).isEqualTo(30);
  }

  /** A create of {@code client} waits on an advisory lock while another transaction holds {@code lock}, and is created after. */
  private void assertWaitsWhileHeld(OrderCreates creates, String client, String lock, long key) {
    Future<List<Future<CreateOutcome>>> create;
    try (Holder holder = new Holder(lock, key)) {
      create = creates.create(List.of(request(1001, client, 1)), 1000, clients);
      Await.until("the create of " + client + " waits for an advisory lock", Duration.ofSeconds(10),
          () -> Sql.count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") > 0);
      assertThat(create.isComplete()).isFalse();
    }
    assertThat(TestService.await(TestService.await(create).get(0)).order().id()).as("created once the lock was given back").isPositive();
  }

  @Test
  void ordersPastTheGroupsShareAreCreatedByATransactionOfTheirOwn() {
    List<CreateRequest> five = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      five.add(request(1001, "dev-user", 1));
    }
    List<Future<CreateOutcome>> answers = TestService.await(creates(1001, 1).create(five, 1000, clients));
    List<Long> ids = answers.stream().map(answer -> TestService.await(answer).order().id()).toList();
    assertThat(ids).as("all five created").hasSize(5).doesNotContainNull();
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE client = 'dev-user'")).isEqualTo(5);
    assertThat(Sql.count("SELECT count(DISTINCT xmin::text) FROM orders WHERE client = 'dev-user'"))
        .as("two orders in the first group, the three after them in a second").isEqualTo(2);
  }

  /**
   * {@code count} creates of {@code client}, one per user, in groups of 3 from two nodes of four connections each,
   * every group's orders of {@code qty} units: all at once, then waits for every answer.
   */
  private List<Future<CreateOutcome>> race(String client, int qty, int count) {
    List<Future<List<Future<CreateOutcome>>>> groups = new ArrayList<>();
    OrderCreates[] nodes = {creates(1001, 4), creates(1002, 4)};
    for (int g = 0; g * 3 < count; g++) {
      int node = g % 2;
      List<CreateRequest> group = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        group.add(request(1001 + node, client, qty));
      }
      groups.add(nodes[node].create(group, 1000, clients));
    }
    List<Future<CreateOutcome>> answers = new ArrayList<>();
    groups.forEach(group -> answers.addAll(TestService.await(group)));
    TestService.await(Future.join(answers).transform(allSettled -> Future.succeededFuture()));
    return answers;
  }

  private static void assertExactly(List<Future<CreateOutcome>> answers, int created, Reason refusal, String client) {
    assertThat(answers.stream().filter(Future::succeeded).count()).as("created").isEqualTo(created);
    assertThat(answers.stream().filter(Future::failed).map(answer -> answer.cause() instanceof OrderRejected rejected
        ? rejected.reason() : answer.cause()).distinct().toList()).containsExactly(refusal);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE client = ?", client)).isEqualTo(created);
  }

  private OrderCreates creates(int nodeId, int connections) {
    Pool pool = Pools.shared(vertx, "headroom-test-" + nodeId + "-" + UUID.randomUUID(), TestDatabase.connectOptions(), connections, 1,
        TestDatabase.databaseConfig(Map.of()).intake());
    return new OrderCreates(pool, Duration.ofSeconds(1), new LockedSkus(Duration.ofSeconds(3)), SMALL, order -> {
      throw new OrderRejected(Reason.ORDER_ID_UNAVAILABLE, "ids of this test are unique");
    });
  }

  private CreateRequest request(int nodeId, String client, int qty) {
    long id = idsByNode.computeIfAbsent(nodeId, node -> new OrderIds(node, WallClock.SYSTEM)).next();
    String user = "user-" + users.incrementAndGet();
    NewOrder order = new NewOrder(id, OrderIds.shardOf(id, TestDatabase.SHARDS), user, "physical",
        List.of(new OrderItem(SKU, qty)), 600, Optional.empty());
    return new CreateRequest(order, new IdempotencyKey(client, user, "hash-" + user),
        System.nanoTime() + TimeUnit.MINUTES.toNanos(1));
  }

  /** Another transaction holding advisory locks (the statement {@code lock} with the key {@code $1}) until closed. */
  private static final class Holder implements AutoCloseable {
    private final Vertx vertx = Vertx.vertx();
    private final SqlConnection conn;

    Holder(String lock, long key) {
      Pool pool = Pools.shared(vertx, "headroom-holder-" + UUID.randomUUID(), TestDatabase.connectOptions(), 1, 1,
          TestDatabase.databaseConfig(Map.of()).intake());
      conn = TestService.await(pool.getConnection());
      TestService.await(conn.query("BEGIN").execute());
      TestService.await(conn.preparedQuery(lock).execute(Tuple.of(key)));
    }

    @Override
    public void close() {
      TestService.await(conn.query("COMMIT").execute());
      TestService.await(vertx.close());
    }
  }
}
