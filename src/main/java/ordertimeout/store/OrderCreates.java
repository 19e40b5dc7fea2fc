package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.config.AppConfig;
import ordertimeout.order.CreateOutcome;
import ordertimeout.order.CreateRequest;
import ordertimeout.order.Digests;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.NewOrder;
import ordertimeout.order.Order;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.UnaryOperator;

/**
 * Creates a group of orders in one transaction (group commit): each order with its items, its
 * reservation, its idempotency key and its ORDER_CREATED event. Each request is decided on its own,
 * in arrival order — one order's insufficient stock, exceeded cap, reused key, taken id or passed deadline never
 * fails the others in its group; a refused one leaves nothing behind. The caps: unpaid orders per user, and per
 * client unpaid orders and reserved units, read from client_holdings (kept by triggers, migration V3). Far from its
 * caps a client's groups run side by side; near them one after another ({@link CapHeadroom}): an order a group
 * could not take side by side is decided by a transaction of its own started when the group commits (outside the
 * intake's groups in flight, so a later group may decide a later order of that client first).
 *
 * <p>A stock row another transaction holds past the pool's {@code lock_timeout} must not hold up the creates of
 * other SKUs: the group is rolled back, the SKUs held at that moment are found without waiting and remembered
 * ({@link LockedSkus}), their requests answer {@link Reason#ROW_LOCKED}, and the rest run again at once, up to
 * {@link #LOCK_ROUNDS} times in all (a rerun may wait behind another group that took a row of its SKUs in SKU
 * order and waits for the held row itself).
 */
public final class OrderCreates {
  private static final Logger log = LoggerFactory.getLogger(OrderCreates.class);
  /** Inserts of one order whose id was taken already before it is refused (with a unique generator, one is plenty). */
  private static final int ID_ATTEMPTS = 3;
  private static final int LOCK_ROUNDS = 3;

  private final Pool pool;
  private final int idleHolderMillis;
  private final LockedSkus lockedSkus;
  private final CapHeadroom headroom;
  private final UnaryOperator<NewOrder> withNewId;

  /**
   * {@code lockWait}: the pool's {@code lock_timeout}; a row counts as held when its holder has sat idle in its
   * transaction for over half of it (any other holder is another transaction passing through, see
   * {@link Sql#LOCKED_SKUS}). {@code withNewId}: the same order under a new id, for one whose id is taken; or
   * {@link OrderRejected} when there is none.
   */
  public OrderCreates(Pool pool, Duration lockWait, LockedSkus lockedSkus, UnaryOperator<NewOrder> withNewId) {
    this(pool, lockWait, lockedSkus, CapHeadroom.DEFAULT, withNewId);
  }

  OrderCreates(Pool pool, Duration lockWait, LockedSkus lockedSkus, CapHeadroom headroom, UnaryOperator<NewOrder> withNewId) {
    this.pool = pool;
    this.idleHolderMillis = (int) lockWait.dividedBy(2).toMillis();
    this.lockedSkus = lockedSkus;
    this.headroom = headroom;
    this.withNewId = withNewId;
  }

  /** Exactly one of the two is set. */
  private record CreateResult(CreateOutcome outcome, OrderRejected rejection) {
    static CreateResult refused(Reason reason, String detail) {
      return new CreateResult(null, new OrderRejected(reason, detail));
    }

    Future<CreateOutcome> future() {
      return rejection == null ? Future.succeededFuture(outcome) : Future.failedFuture(rejection);
    }
  }

  /**
   * Decides every request of the group: one result per request, in order, the outcome or {@link OrderRejected}
   * (or, for a request left to a transaction of its own, that transaction's failure); the returned future fails only
   * when nothing was committed.
   */
  public Future<List<Future<CreateOutcome>>> create(List<CreateRequest> requests, int maxUnpaidPerUser, AppConfig.Clients clients) {
    return create(requests, maxUnpaidPerUser, clients, false, LOCK_ROUNDS);
  }

  /** {@code exclusive}: every client's lock is taken exclusive (for the orders a group left to a group of their own). */
  private Future<List<Future<CreateOutcome>>> create(List<CreateRequest> requests, int maxUnpaidPerUser, AppConfig.Clients clients,
                                                     boolean exclusive, int rounds) {
    CreateResult[] results = new CreateResult[requests.size()];
    List<Integer> tried = new ArrayList<>();
    for (int i = 0; i < results.length; i++) {
      String locked = lockedSkus.heldSkuOf(requests.get(i).order());
      if (locked == null) {
        tried.add(i);
      } else {
        results[i] = CreateResult.refused(Reason.ROW_LOCKED, "SKU " + locked
            + " is held by another transaction; nothing was stored, retry later");
      }
    }
    List<CreateRequest> group = tried.stream().map(requests::get).toList();
    Set<String> sharedClients = new HashSet<>();
    if (!exclusive) {
      group.forEach(request -> {
        String client = request.idempotency().client();
        if (headroom.shared(client, clients.of(client))) {
          sharedClients.add(client);
        }
      });
    }
    Future<List<CreateResult>> decided = group.isEmpty()
        ? Future.succeededFuture(List.of())
        : pool.withTransaction(conn -> new Group(conn, group, maxUnpaidPerUser, clients, sharedClients, headroom, withNewId).run());
    return decided
        .map(groupResults -> {
          for (int t = 0; t < tried.size(); t++) {
            results[tried.get(t)] = groupResults.get(t);
          }
          List<Integer> left = new ArrayList<>();
          List<Future<CreateOutcome>> answers = new ArrayList<>();
          for (int i = 0; i < results.length; i++) {
            answers.add(results[i] == null ? null : results[i].future());
            if (results[i] == null) {
              left.add(i);
            }
          }
          if (!left.isEmpty()) { // decided now by a group of their own, holding their clients' locks exclusive
            Future<List<Future<CreateOutcome>>> ofTheirOwn =
                create(left.stream().map(requests::get).toList(), maxUnpaidPerUser, clients, true, LOCK_ROUNDS);
            for (int l = 0; l < left.size(); l++) {
              int at = l;
              answers.set(left.get(l), ofTheirOwn.compose(answered -> answered.get(at)));
            }
          }
          return answers;
        })
        .recover(failure -> rounds > 1 && SqlStates.is(failure, SqlStates.LOCK_NOT_AVAILABLE)
            ? rememberLockedSkus(group).compose(remembered -> create(requests, maxUnpaidPerUser, clients, exclusive, rounds - 1))
            : Future.failedFuture(failure));
  }

  private Future<Void> rememberLockedSkus(List<CreateRequest> requests) {
    TreeSet<String> skus = new TreeSet<>();
    requests.forEach(request -> request.order().items().forEach(item -> skus.add(item.sku())));
    return pool.withTransaction(conn -> conn.preparedQuery(Sql.LOCKED_SKUS)
            .execute(Tuple.of(skus.toArray(String[]::new), idleHolderMillis)))
        .map(rows -> {
          List<String> held = new ArrayList<>();
          rows.forEach(row -> held.add(row.getString("sku")));
          lockedSkus.remember(held);
          return null;
        });
  }

  /**
   * One group's transaction; requests still undecided have a null result, and so have those it leaves to a group
   * of their own ({@link CapHeadroom}).
   */
  private static final class Group {
    private final SqlConnection conn;
    private final List<CreateRequest> requests;
    private final int maxUnpaidPerUser;
    private final AppConfig.Clients clients;
    /** The clients whose lock this group takes shared; the others' exclusive. */
    private final Set<String> sharedClients;
    private final CapHeadroom headroom;
    private final UnaryOperator<NewOrder> withNewId;
    private final CreateResult[] results;

    /** {@code requests} is copied: a request whose id is taken gets a new one in its place. */
    Group(SqlConnection conn, List<CreateRequest> requests, int maxUnpaidPerUser, AppConfig.Clients clients,
          Set<String> sharedClients, CapHeadroom headroom, UnaryOperator<NewOrder> withNewId) {
      this.conn = conn;
      this.requests = new ArrayList<>(requests);
      this.maxUnpaidPerUser = maxUnpaidPerUser;
      this.clients = clients;
      this.sharedClients = sharedClients;
      this.headroom = headroom;
      this.withNewId = withNewId;
      this.results = new CreateResult[requests.size()];
    }

    /**
     * First the transaction's setting that runs its statements on the session's plans made once (decision 0038).
     * The locks and reads are sent together (pipelined) and PostgreSQL runs them one after another, so each read
     * comes after the lock before it, and every group takes its locks in the same order: idempotency keys (tried,
     * never waited for), users and clients (sorted together), SKUs (sorted). Then the decisions, one statement writing
     * the orders with their reservations, and one storing their idempotency keys.
     */
    Future<List<CreateResult>> run() {
      conn.query(Sql.PLAN_ONCE_PER_SESSION).execute(); // fails the transaction with it, should it ever fail
      Future<RowSet<Row>> keyLocks = conn.preparedQuery(Sql.TRY_LOCK_IDEMPOTENCY_KEYS).execute(keyLocksTuple());
      Future<RowSet<Row>> storedKeys = conn.preparedQuery(Sql.SELECT_IDEMPOTENCY_KEYS).execute(storedKeysTuple());
      Future<RowSet<Row>> userAndClientLocks = conn.preparedQuery(Sql.LOCK_USERS_AND_CLIENTS).execute(userAndClientLocksTuple());
      Future<RowSet<Row>> unpaid = conn.preparedQuery(Sql.COUNT_UNPAID_OF_USERS).execute(usersTuple());
      Future<RowSet<Row>> holdings = conn.preparedQuery(Sql.SELECT_CLIENT_HOLDINGS).execute(clientsTuple());
      Future<RowSet<Row>> stock = conn.preparedQuery(Sql.LOCK_STOCK_BY_SKU).execute(skusTuple());
      return Future.all(List.of(keyLocks, storedKeys, userAndClientLocks, unpaid, holdings, stock))
          .compose(all -> {
            refuseKeysInProgress(keyLocks.result());
            replayStoredKeys(storedKeys.result());
            return reserveAndInsert(unpaidByUser(unpaid.result()), holdingsByClient(holdings.result()), available(stock.result()));
          })
          .map(done -> Arrays.asList(results));
    }

    private Tuple keyLocksTuple() {
      Long[] keys = new Long[requests.size()];
      for (int i = 0; i < keys.length; i++) {
        IdempotencyKey key = requests.get(i).idempotency();
        keys[i] = lockKey("idempotency", key.client(), key.key());
      }
      return Tuple.of(keys);
    }

    /** A key taken by a running transaction (or twice in this group) answers request_in_progress. */
    private void refuseKeysInProgress(RowSet<Row> locks) {
      Set<String> seen = new HashSet<>();
      int i = 0;
      for (Row row : locks) {
        IdempotencyKey key = requests.get(i).idempotency();
        if (!seen.add(key.client() + '\u0000' + key.key()) || !row.getBoolean("locked")) {
          results[i] = CreateResult.refused(Reason.REQUEST_IN_PROGRESS, "a request with this Idempotency-Key is still running");
        }
        i++;
      }
    }

    private Tuple storedKeysTuple() {
      String[] clients = requests.stream().map(request -> request.idempotency().client()).toArray(String[]::new);
      String[] keys = requests.stream().map(request -> request.idempotency().key()).toArray(String[]::new);
      return Tuple.tuple().addArrayOfString(clients).addArrayOfString(keys);
    }

    /** A key already stored answers the order its first request created (same request), or is refused (another request). */
    private void replayStoredKeys(RowSet<Row> rows) {
      Map<String, Row> stored = new HashMap<>();
      rows.forEach(row -> stored.put(row.getString("client") + '\u0000' + row.getString("key"), row));
      for (int i : undecided()) {
        IdempotencyKey key = requests.get(i).idempotency();
        Row row = stored.get(key.client() + '\u0000' + key.key());
        if (row == null) {
          continue;
        }
        results[i] = row.getString("request_hash").equals(key.requestHash())
            ? new CreateResult(new CreateOutcome(Order.fromJson(new JsonObject(row.getString("response_body"))), true), null)
            : CreateResult.refused(Reason.IDEMPOTENCY_KEY_REUSED, "this Idempotency-Key was used for a different request body");
      }
    }

    /**
     * Every user and every client of the group, locked in the order of their sorted keys so that two groups cannot
     * deadlock: a client's lock taken exclusive makes its creates read and add to its holdings one transaction after
     * another; taken shared, with a slot lock of the client (the slot of this connection), up to
     * {@value CapHeadroom#SLOTS} of them at once.
     */
    private Tuple userAndClientLocksTuple() {
      TreeMap<Long, String> locks = new TreeMap<>();
      for (CreateRequest request : requests) {
        String client = request.idempotency().client();
        locks.put(lockKey("user", client, request.order().userId()), "exclusive");
        if (sharedClients.contains(client)) {
          locks.put(lockKey("client", client), "shared");
          locks.put(slotLocksKey(client), "slot");
        } else {
          locks.put(lockKey("client", client), "exclusive");
        }
      }
      return Tuple.tuple().addArrayOfLong(locks.keySet().toArray(Long[]::new))
          .addArrayOfString(locks.values().toArray(String[]::new)).addInteger(CapHeadroom.SLOTS);
    }

    private Tuple clientsTuple() {
      return Tuple.of(requests.stream().map(request -> request.idempotency().client()).distinct().toArray(String[]::new));
    }

    private static Map<String, Holdings> holdingsByClient(RowSet<Row> rows) {
      Map<String, Holdings> holdings = new HashMap<>();
      rows.forEach(row -> holdings.put(row.getString("client"), new Holdings(row.getLong("unpaid"), row.getLong("units"))));
      return holdings;
    }

    /** What each client of the group holds with the orders this group takes, for the guess of the next group's lock. */
    private void tellHeadroom(Map<String, Holdings> holdings) {
      requests.stream().map(request -> request.idempotency().client()).distinct().forEach(client -> {
        Holdings held = holdings.getOrDefault(client, Holdings.NONE);
        headroom.read(client, held.unpaid(), held.units(), clients.of(client));
      });
    }

    private Tuple usersTuple() {
      Set<String> users = new HashSet<>();
      List<String> clients = new ArrayList<>();
      List<String> userIds = new ArrayList<>();
      for (CreateRequest request : requests) {
        if (users.add(userKey(request.idempotency().client(), request.order().userId()))) {
          clients.add(request.idempotency().client());
          userIds.add(request.order().userId());
        }
      }
      return Tuple.tuple().addArrayOfString(clients.toArray(String[]::new)).addArrayOfString(userIds.toArray(String[]::new));
    }

    private static Map<String, Long> unpaidByUser(RowSet<Row> rows) {
      Map<String, Long> unpaid = new HashMap<>();
      rows.forEach(row -> unpaid.put(userKey(row.getString("client"), row.getString("user_id")), row.getLong("unpaid")));
      return unpaid;
    }

    /** Every SKU of the group, locked in SKU order. */
    private Tuple skusTuple() {
      TreeSet<String> skus = new TreeSet<>();
      for (CreateRequest request : requests) {
        request.order().items().forEach(item -> skus.add(item.sku()));
      }
      return Tuple.of(skus.toArray(String[]::new));
    }

    private static Map<String, Long> available(RowSet<Row> rows) {
      Map<String, Long> available = new HashMap<>();
      rows.forEach(row -> available.put(row.getString("sku"), row.getLong("available")));
      return available;
    }

    /** Decides each open request in arrival order (the last moment its deadline is looked at), then writes the accepted ones. */
    private Future<Void> reserveAndInsert(Map<String, Long> unpaidByUser, Map<String, Holdings> holdingsByClient,
                                          Map<String, Long> available) {
      Map<String, Long> unpaid = new HashMap<>(unpaidByUser);
      Map<String, Holdings> holdings = new HashMap<>(holdingsByClient);
      Set<String> leftToAGroupOfTheirOwn = new HashSet<>();
      List<Integer> accepted = new ArrayList<>();
      for (int i : undecided()) {
        if (requests.get(i).pastDeadline()) {
          results[i] = CreateResult.refused(Reason.OVERLOADED,
              "the request was not decided before its deadline; nothing was stored, retry later");
          continue;
        }
        NewOrder order = requests.get(i).order();
        String client = requests.get(i).idempotency().client();
        if (leftToAGroupOfTheirOwn.contains(client)) {
          continue; // after an order of its client left, so that the client's orders are still decided in arrival order
        }
        String user = userKey(client, order.userId());
        long userUnpaid = unpaid.getOrDefault(user, 0L);
        Holdings held = holdings.getOrDefault(client, Holdings.NONE);
        CreateResult refusal = refusal(order, userUnpaid, client, held, available);
        if (refusal != null) {
          results[i] = refusal;
          continue;
        }
        Holdings heldWithThis = held.plus(order);
        if (sharedClients.contains(client)) {
          Holdings read = holdingsByClient.getOrDefault(client, Holdings.NONE);
          if (!headroom.takes(read.unpaid(), read.units(), heldWithThis.unpaid() - read.unpaid(),
              heldWithThis.units() - read.units(), clients.of(client))) {
            leftToAGroupOfTheirOwn.add(client);
            continue;
          }
        }
        unpaid.put(user, userUnpaid + 1);
        holdings.put(client, heldWithThis);
        for (OrderItem item : order.items()) {
          available.merge(item.sku(), (long) -item.qty(), Long::sum);
        }
        accepted.add(i);
      }
      tellHeadroom(holdings);
      if (accepted.isEmpty()) {
        return Future.succeededFuture();
      }
      return insert(accepted, new HashMap<>(), 1).compose(created -> storeKeys(inserted(accepted), created));
    }

    /**
     * Inserts the orders {@code pending}; one whose id another order has already (two nodes that minted the same
     * id) inserts nothing, and is inserted again under a new id, {@value #ID_ATTEMPTS} times at most, then refused:
     * only that request fails, the rest of its group goes on. Answers every order inserted, by id.
     */
    private Future<Map<Long, Row>> insert(List<Integer> pending, Map<Long, Row> created, int attempt) {
      return conn.preparedQuery(Sql.INSERT_ORDERS).execute(insertOrdersTuple(pending)).compose(rows -> {
        rows.forEach(row -> created.put(row.getLong("id"), row));
        List<Integer> again = new ArrayList<>();
        for (int i : pending) {
          CreateRequest request = requests.get(i);
          if (created.containsKey(request.order().id())) {
            continue;
          }
          log.warn("order id {} is taken already (another node minted it too); attempt {} of {} for this order",
              request.order().id(), attempt, ID_ATTEMPTS);
          if (attempt >= ID_ATTEMPTS) {
            results[i] = CreateResult.refused(Reason.ORDER_ID_UNAVAILABLE, "no unique id could be given to the order; retry");
            continue;
          }
          try {
            requests.set(i, new CreateRequest(withNewId.apply(request.order()), request.idempotency(), request.decideByNanos()));
            again.add(i);
          } catch (OrderRejected noId) {
            results[i] = new CreateResult(null, noId);
          }
        }
        return again.isEmpty() ? Future.succeededFuture(created) : insert(again, created, attempt + 1);
      });
    }

    private List<Integer> inserted(List<Integer> accepted) {
      return accepted.stream().filter(i -> results[i] == null).toList();
    }

    private CreateResult refusal(NewOrder order, long userUnpaid, String client, Holdings held, Map<String, Long> available) {
      if (userUnpaid >= maxUnpaidPerUser) {
        return CreateResult.refused(Reason.TOO_MANY_UNPAID_ORDERS,
            "user " + order.userId() + " already has " + userUnpaid + " unpaid orders (at most " + maxUnpaidPerUser + ")");
      }
      AppConfig.ClientLimits limits = clients.of(client);
      if (held.unpaid() >= limits.maxUnpaidOrders()) {
        return CreateResult.refused(Reason.CLIENT_UNPAID_CAP,
            "this client already has " + held.unpaid() + " unpaid orders (at most " + limits.maxUnpaidOrders() + ")");
      }
      long units = Holdings.units(order);
      if (held.units() + units > limits.maxReservedUnits()) {
        return CreateResult.refused(Reason.CLIENT_UNITS_CAP, "this client's unpaid orders hold " + held.units()
            + " units; " + units + " more would pass its cap of " + limits.maxReservedUnits());
      }
      for (OrderItem item : order.items()) {
        Long onHand = available.get(item.sku());
        if (onHand == null) {
          return CreateResult.refused(Reason.UNKNOWN_SKU, "unknown SKU " + item.sku());
        }
        if (onHand < item.qty()) {
          return CreateResult.refused(Reason.INSUFFICIENT_STOCK,
              "SKU " + item.sku() + " has " + onHand + " available, " + item.qty() + " requested");
        }
      }
      return null;
    }

    private Tuple insertOrdersTuple(List<Integer> accepted) {
      int n = accepted.size();
      Long[] ids = new Long[n];
      Integer[] shards = new Integer[n];
      String[] clients = new String[n];
      String[] userIds = new String[n];
      String[] categories = new String[n];
      Integer[] timeouts = new Integer[n];
      Integer[] reminders = new Integer[n];
      List<Long> itemOrders = new ArrayList<>();
      List<String> itemSkus = new ArrayList<>();
      List<Integer> itemQtys = new ArrayList<>();
      for (int a = 0; a < n; a++) {
        CreateRequest request = requests.get(accepted.get(a));
        NewOrder order = request.order();
        ids[a] = order.id();
        shards[a] = order.shard();
        clients[a] = request.idempotency().client();
        userIds[a] = order.userId();
        categories[a] = order.category();
        timeouts[a] = order.timeoutSeconds();
        reminders[a] = order.remindAfterSeconds().orElse(null);
        for (OrderItem item : order.items()) {
          itemOrders.add(order.id());
          itemSkus.add(item.sku());
          itemQtys.add(item.qty());
        }
      }
      return Tuple.tuple()
          .addArrayOfLong(ids).addArrayOfInteger(shards).addArrayOfString(clients).addArrayOfString(userIds)
          .addArrayOfString(categories).addArrayOfInteger(timeouts).addArrayOfInteger(reminders)
          .addArrayOfLong(itemOrders.toArray(Long[]::new)).addArrayOfString(itemSkus.toArray(String[]::new))
          .addArrayOfInteger(itemQtys.toArray(Integer[]::new));
    }

    /** Stores each new order, as created, under its idempotency key: a replay answers it again. */
    private Future<Void> storeKeys(List<Integer> accepted, Map<Long, Row> byId) {
      if (accepted.isEmpty()) {
        return Future.succeededFuture();
      }
      int n = accepted.size();
      String[] clients = new String[n];
      String[] keys = new String[n];
      String[] hashes = new String[n];
      Integer[] statuses = new Integer[n];
      String[] bodies = new String[n];
      Long[] orderIds = new Long[n];
      for (int a = 0; a < n; a++) {
        int i = accepted.get(a);
        NewOrder order = requests.get(i).order();
        IdempotencyKey key = requests.get(i).idempotency();
        Row row = byId.get(order.id());
        Order created = new Order(order.id(), order.userId(), order.category(), OrderStatus.UNPAID, null, order.items(),
            row.getOffsetDateTime("created_at").toInstant(), row.getOffsetDateTime("close_at").toInstant(),
            row.getOffsetDateTime("remind_at") == null ? null : row.getOffsetDateTime("remind_at").toInstant(), null, null, null);
        String body = created.toJson().encode();
        results[i] = new CreateResult(new CreateOutcome(created, false), null);
        clients[a] = key.client();
        keys[a] = key.key();
        hashes[a] = key.requestHash();
        statuses[a] = 201;
        bodies[a] = body;
        orderIds[a] = order.id();
      }
      return conn.preparedQuery(Sql.INSERT_IDEMPOTENCY_KEYS)
          .execute(Tuple.tuple().addArrayOfString(clients).addArrayOfString(keys).addArrayOfString(hashes)
              .addArrayOfInteger(statuses).addArrayOfString(bodies).addArrayOfLong(orderIds))
          .mapEmpty();
    }

    private List<Integer> undecided() {
      List<Integer> open = new ArrayList<>();
      for (int i = 0; i < results.length; i++) {
        if (results[i] == null) {
          open.add(i);
        }
      }
      return open;
    }
  }

  /** A client's unpaid orders and the units in them. */
  private record Holdings(long unpaid, long units) {
    static final Holdings NONE = new Holdings(0, 0);

    static long units(NewOrder order) {
      long units = 0;
      for (OrderItem item : order.items()) {
        units += item.qty();
      }
      return units;
    }

    Holdings plus(NewOrder order) {
      return new Holdings(unpaid + 1, units + units(order));
    }
  }

  private static String userKey(String client, String userId) {
    return client + '\u0000' + userId;
  }

  /**
   * The first of the client's {@value CapHeadroom#SLOTS} slot locks; the slot of a connection is this key plus its
   * backend pid modulo the number of slots (low bits cleared, so the sum is a key of its own).
   */
  static long slotLocksKey(String client) {
    return lockKey("client-slots", client) & -CapHeadroom.SLOTS;
  }

  /** A 64-bit key for a transaction-scoped advisory lock; a rare collision only serialises two unrelated requests. */
  static long lockKey(String... parts) {
    byte[] hash = Digests.sha256(parts);
    long key = 0;
    for (int i = 0; i < 8; i++) {
      key = (key << 8) | (hash[i] & 0xff);
    }
    return key;
  }
}
