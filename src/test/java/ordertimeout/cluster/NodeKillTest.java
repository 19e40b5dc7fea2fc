package ordertimeout.cluster;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.EventsTopic;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.NodeProcess;
import ordertimeout.support.Prometheus;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.StockLedger;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestRedis;
import ordertimeout.support.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three nodes as separate processes share the database, a real broker and a real Redis. 10,000 orders go in
 * through all of them (some paid, some cancelled); one node is killed with SIGKILL while deadlines
 * fall due. Every unpaid order must still close exactly once, never early, with the stock right; the
 * close log and the events topic must agree; and the killed node's orders must be closed by the wheels of
 * the nodes that took its shards and loaded them from the database, not by the sweep. So must the orders the killed
 * node committed in the shards the survivors kept whose timers were still in its producer: a few are written into
 * the database just before the kill, with no timer sent, and the survivors read them again when they learn that a
 * node left. The sweep's grace is a minute here, so that it is only a safety net: a close it makes means a wheel missed a
 * deadline. Every event also reaches a webhook, sent by its shard's owner, the killed node's by the survivors, each
 * order's in the order written.
 */
class NodeKillTest {
  private static final int ORDERS = 10_000;
  private static final int SKUS = 1_000;
  /** Orders the killed node committed in each survivor's kept shards whose timers it never sent (seeded). */
  private static final int UNSENT_PER_SURVIVOR = 10;
  /** When they fall due after the kill: after the survivors learnt of it (a session timeout and a rebalance). */
  private static final long UNSENT_DUE_AFTER_MILLIS = 20_000;
  private static final int SESSION_TIMEOUT_MILLIS = 6_000;
  private static final int SWEEP_GRACE_SECONDS = 60;
  /**
   * Timer records reach a shard's new owner from the offset its old owner committed (every second); an
   * order created this long before the kill was past that offset, so only the reload can have given it to a survivor.
   */
  private static final long BEYOND_COMMITTED_OFFSET_MILLIS = 5_000;
  /** Generous: what the lateness bound adds when the machine is loaded; the path check above it is the real one. */
  private static final long LATENESS_SAFETY_NET_MILLIS = 20_000;
  /** How often one request answered 503 is sent again (100 ms apart) before the load fails with that answer. */
  private static final int UNSERVED_RETRIES = 300;
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @Test
  void killingANodeWhileDeadlinesFallDueLosesNoOrderAndClosesNoneTwice() throws Exception {
    TestDatabase.reset();
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    List<NodeProcess> nodes = new ArrayList<>();
    try (TestRedis redis = TestRedis.start(); WebhookReceiver webhook = new WebhookReceiver()) {
      for (int nodeId = 1; nodeId <= 3; nodeId++) {
        Map<String, String> settings = new HashMap<>(cluster.forNode(40 + nodeId));
        settings.put("OT_KAFKA_SESSION_TIMEOUT_MILLIS", Integer.toString(SESSION_TIMEOUT_MILLIS));
        settings.put("OT_REDIS_URL", redis.url());
        settings.put("OT_WEBHOOKS", "[{url: '" + webhook.url("/shop") + "', secret: node-kill-test-webhook-secret}]");
        settings.put("OT_ORDERS_MAX_UNPAID_PER_USER", "100000");
        settings.put("OT_CLIENTS_DEFAULT_CREATES_PER_SECOND", "0"); // the load is as fast as the nodes go, and must all be taken
        settings.put("OT_SWEEP_INTERVAL_SECONDS", "2");
        settings.put("OT_SWEEP_GRACE_SECONDS", Integer.toString(SWEEP_GRACE_SECONDS));
        settings.put("OT_DATABASE_POOL_SIZE", "6");
        settings.put("OT_HTTP_INSTANCES", "1");
        settings.put("OT_LOGGING_LEVELS", "{io.netty: WARN, io.zonky: WARN, org.flywaydb: WARN, org.apache.kafka: WARN, access: OFF}");
        nodes.add(NodeProcess.start(40 + nodeId, settings));
      }
      Await.until("three nodes ready and owning every shard between them", Duration.ofSeconds(120),
          () -> nodes.stream().allMatch(NodeProcess::ready) && ownedByAll(nodes).size() == TestDatabase.SHARDS
              && nodes.stream().allMatch(node -> !owned(node).isEmpty()));
      NodeProcess victim = nodes.get(2);
      List<NodeProcess> survivors = nodes.subList(0, 2);

      Sql.execute("INSERT INTO inventory (sku, available, reserved) SELECT 'SKU-' || n, 1000000, 0 FROM generate_series(0, ?) n", SKUS - 1);
      for (int n = 0; n < SKUS; n++) {
        StockLedger.putIn("SKU-" + n, 1_000_000);
      }
      Load load = new Load(nodes);
      Thread loadThread = new Thread(load, "node-kill-test-load");
      loadThread.start();
      // Kill once the load is well under way and deadlines are falling due; the load goes on through the survivors.
      try {
        Await.until("orders going in and deadlines passing", Duration.ofSeconds(300), () -> load.stillRunning()
            && load.created.get() >= ORDERS * 2 / 5 && Sql.count("SELECT count(*) FROM orders WHERE close_at <= now()") >= 500);
      } catch (AssertionError slow) {
        throw new AssertionError(slow.getMessage() + String.format(" (%d created, %d requests answered 503 and sent again)",
            load.created.get(), load.unserved.get()), slow.getCause());
      }
      Set<Integer> victimShards = owned(victim);
      long dueBeforeKill = Sql.count("SELECT count(*) FROM orders WHERE close_at <= now()");
      Map<NodeProcess, Double> reloadsBeforeKill = new HashMap<>();
      for (NodeProcess survivor : survivors) {
        reloadsBeforeKill.put(survivor, reloads(survivor));
      }
      List<Long> unsent = new ArrayList<>();
      for (NodeProcess survivor : survivors) {
        for (int shard : owned(survivor).stream().sorted().limit(UNSENT_PER_SURVIVOR).toList()) {
          unsent.add(SeedOrders.idsInShard(shard, 1)[0]);
        }
      }
      long[] unsentIds = unsent.stream().mapToLong(Long::longValue).toArray();
      SeedOrders.insert("SKU-UNSENT", unsentIds, UNSENT_DUE_AFTER_MILLIS, 100, null);
      Instant killedAt = Instant.now();
      victim.kill();
      // the database's clock, as closed_at and created_at: whatever closed after this was closed by a survivor
      java.sql.Timestamp deadFrom = (java.sql.Timestamp) Sql.rows("SELECT clock_timestamp() AS now").get(0).get("now");
      System.out.printf("NodeKillTest: killed node %d (shards %s) with %d orders created and %d deadlines passed%n",
          victim.nodeId(), victimShards, load.created.get(), dueBeforeKill);
      Await.until("the survivors own every shard", Duration.ofSeconds(60), () -> ownedByAll(survivors).size() == TestDatabase.SHARDS
          && survivors.stream().allMatch(NodeProcess::ready));
      long takeoverMillis = Duration.between(killedAt, Instant.now()).toMillis();
      for (NodeProcess survivor : survivors) {
        assertThat(survivor.metrics()).as("a survivor's /metrics")
            .contains("ordertimeout_shards_owned " + (double) owned(survivor).size())
            .contains("kafka_consumer_fetch_manager_records_lag_max");
      }
      long reloadMillis = survivors.stream().mapToLong(node -> node.stats().getLong("lastReloadMillis")).max().orElseThrow();
      for (NodeProcess survivor : survivors) {
        Set<Integer> gained = new HashSet<>(owned(survivor));
        gained.retainAll(victimShards);
        if (!gained.isEmpty()) {
          assertThat(reloads(survivor)).as("wheel reloads of node %d, which took shards %s of the killed node", survivor.nodeId(), gained)
              .isGreaterThan(reloadsBeforeKill.get(survivor));
        }
      }
      loadThread.join(Duration.ofSeconds(600).toMillis());
      assertThat(load.failure.get()).as("the load").isNull();
      assertThat(load.created.get()).isEqualTo(ORDERS);
      System.out.printf("NodeKillTest: %d orders created through 3 nodes, then 2, in %d ms (%d requests retried on another node "
              + "after the kill, %d after a 503); %d paid, %d cancelled%n", ORDERS, load.millis, load.retried.get(), load.unserved.get(),
          load.paid.size(), load.cancelled.size());
      Set<String> paid = load.paid;
      Set<String> cancelled = load.cancelled;
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE close_at > ?", java.sql.Timestamp.from(killedAt)))
          .as("deadlines falling due after the kill").isGreaterThan(ORDERS / 10);


      Instant lastDeadline = Sql.rows("SELECT max(close_at) AS last FROM orders").get(0).get("last") instanceof java.sql.Timestamp last
          ? last.toInstant() : Instant.now();
      // past the sweep's grace: a deadline no wheel fired still closes (by the sweep), and the check below says so
      Await.until("every unpaid order closed", Duration.between(Instant.now(), lastDeadline).plusSeconds(SWEEP_GRACE_SECONDS + 60),
          () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);

      // every order ended once, as its requests said
      assertThat(Sql.count("SELECT count(*) FROM orders")).isEqualTo(ORDERS + unsent.size());
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID' AND id = ANY(?)",
          (Object) paid.stream().map(Long::valueOf).toArray(Long[]::new))).as("orders whose pay answered 200, paid").isEqualTo(paid.size());
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID'")).isEqualTo(paid.size());
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE close_reason = 'USER_CANCELLED'")).isEqualTo(cancelled.size());
      long timedOut = Sql.count("SELECT count(*) FROM orders WHERE close_reason = 'TIMEOUT'");
      assertThat(timedOut).isEqualTo(ORDERS - paid.size() - cancelled.size() + unsent.size());
      Invariants.assertHold(); // one close log line per closed order, none early, stock = unpaid items, events agree

      // the events topic, read from the beginning like a downstream consumer, agrees with the close log
      Await.until("the outbox relayed", Duration.ofSeconds(60),
          () -> Sql.count("SELECT count(*) FROM outbox o WHERE " + Sql.unpublished("o")) == 0);
      List<EventsTopic.Event> events = EventsTopic.readAll(cluster.bootstrapServers(), cluster.eventsTopic());
      Map<Long, EventsTopic.Event> byEventId = new HashMap<>();
      events.forEach(event -> byEventId.putIfAbsent(event.eventId(), event));
      int duplicates = events.size() - byEventId.size();
      Map<String, Long> closedEventsPerOrder = byEventId.values().stream()
          .filter(event -> event.type().equals("ORDER_CLOSED"))
          .collect(Collectors.groupingBy(EventsTopic.Event::orderId, Collectors.counting()));
      Set<String> closedInLog = Sql.rows("SELECT order_id::text AS id FROM order_log WHERE event = 'CLOSED'").stream()
          .map(row -> (String) row.get("id")).collect(Collectors.toSet());
      assertThat(closedEventsPerOrder.values()).as("one ORDER_CLOSED per order after de-duplication").allMatch(count -> count == 1);
      assertThat(closedEventsPerOrder.keySet()).as("the topic and the close log name the same orders").isEqualTo(closedInLog);
      assertThat(byEventId).hasSize((int) Sql.count("SELECT count(*) FROM outbox"));
      System.out.printf("NodeKillTest: %d events read, %d distinct, %d duplicates dropped; %d ORDER_CLOSED for %d closed orders%n",
          events.size(), byEventId.size(), duplicates, closedEventsPerOrder.size(), closedInLog.size());

      assertEveryEventReachedTheWebhookInOrder(webhook);

      // which path closed the killed node's orders: those it held only in its wheel and the database (created before the
      // timer records a survivor could read again), due after it died, closed on time with nobody asking
      String lostShards = victimShards.stream().map(String::valueOf).collect(Collectors.joining(","));
      java.sql.Timestamp heldOnlyBefore = new java.sql.Timestamp(deadFrom.getTime() - BEYOND_COMMITTED_OFFSET_MILLIS);
      Set<String> takenOver = Sql.rows("SELECT id::text AS id FROM orders WHERE shard IN (" + lostShards + ") AND created_at < ? "
              + "AND close_at > ? AND close_reason = 'TIMEOUT'", heldOnlyBefore, deadFrom).stream()
          .map(row -> (String) row.get("id")).filter(id -> !load.asked.contains(id)).collect(Collectors.toSet());
      assertThat(takenOver).as("orders of the killed node's shards that only a reload could give to a survivor").isNotEmpty();
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id IN (" + String.join(",", takenOver) + ") AND closed_at > ?", deadFrom))
          .as("closed after the kill, so by a survivor").isEqualTo(takenOver.size());
      long wheelCloses = 0;
      double caughtUp = 0;
      for (NodeProcess survivor : survivors) {
        JsonObject stats = survivor.stats();
        JsonObject byPath = stats.getJsonObject("timeoutClosesByPath");
        wheelCloses += byPath.getLong("wheel");
        caughtUp += new Prometheus(survivor.metrics()).sum("ordertimeout_wheel_caught_up_total");
        assertThat(byPath.getLong("sweep")).as("timeout closes by the sweep on node %d (%s): every close a survivor made, "
            + "the killed node's orders among them, must be its wheel's. Closed a sweep's grace late: %s", survivor.nodeId(),
            stats.encode(), closedAGraceLate(deadFrom, victimShards)).isZero();
      }
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ANY(?) AND close_reason = 'TIMEOUT' "
              + "AND closed_at < close_at + ? * interval '1 millisecond'", unsent.toArray(Long[]::new),
          LATENESS_SAFETY_NET_MILLIS))
          .as("the killed node's orders in the kept shards whose timers it never sent, closed by a wheel, not a sweep's "
              + "grace late")
          .isEqualTo(unsent.size());
      assertThat(caughtUp).as("recent orders the survivors read again for their kept shards (those above among them)")
          .isGreaterThanOrEqualTo(unsent.size());
      assertThat(wheelCloses).as("timeout closes by the survivors' wheels").isGreaterThanOrEqualTo(takenOver.size());

      // lateness, as a safety net: the killed node's shards against the takeover time plus a generous margin, the others for comparison
      long worstLostMillis = latenessMillis("shard IN (" + lostShards + ")", killedAt);
      long worstOtherMillis = latenessMillis("shard NOT IN (" + lostShards + ")", killedAt);
      long bound = takeoverMillis + LATENESS_SAFETY_NET_MILLIS;
      System.out.printf("NodeKillTest: %d orders of the killed node's shards closed by the survivors' wheels after their reload "
              + "(%d wheel closes on the survivors, none by the sweep); worst lateness on the killed node's shards %d ms (other shards "
              + "%d ms); survivors owned and had loaded every shard %d ms after the kill (session timeout %d, last reload %d); "
              + "safety net %d ms%n", takenOver.size(), wheelCloses, worstLostMillis, worstOtherMillis, takeoverMillis,
          SESSION_TIMEOUT_MILLIS, reloadMillis, bound);
      assertThat(worstLostMillis).as("worst lateness on the killed node's shards, ms").isLessThanOrEqualTo(bound);
    } finally {
      nodes.forEach(NodeProcess::close);
    }
  }

  /**
   * Every event delivered to the webhook at least once (the killed node's in-flight ones may come twice: receivers
   * de-duplicate by webhook-id), and each order's events arriving, first arrivals counted, in the order they were written.
   */
  private static void assertEveryEventReachedTheWebhookInOrder(WebhookReceiver webhook) {
    Await.until("every webhook delivery delivered", Duration.ofSeconds(60),
        () -> Sql.count("SELECT count(*) FROM webhook_deliveries WHERE status <> 'DELIVERED'") == 0);
    Map<String, List<String>> arrivedByOrder = new HashMap<>();
    Set<String> arrived = new HashSet<>();
    List<WebhookReceiver.Received> requests = webhook.received("/shop").stream().filter(r -> r.status() / 100 == 2)
        .sorted(Comparator.comparingLong(WebhookReceiver.Received::receivedNanos)).toList();
    for (WebhookReceiver.Received request : requests) {
      if (arrived.add(request.id())) {
        arrivedByOrder.computeIfAbsent(request.orderId(), order -> new ArrayList<>()).add(request.id());
      }
    }
    Map<String, List<String>> writtenByOrder = new HashMap<>();
    Sql.rows("SELECT order_id::text AS order_text, event_id::text AS event_text FROM outbox ORDER BY event_id").forEach(row ->
        writtenByOrder.computeIfAbsent((String) row.get("order_text"), order -> new ArrayList<>()).add((String) row.get("event_text")));
    assertThat(arrived).as("events that reached the webhook").hasSize(writtenByOrder.values().stream().mapToInt(List::size).sum());
    assertThat(arrivedByOrder).as("each order's events, in the order they reached the webhook").isEqualTo(writtenByOrder);
    System.out.printf("NodeKillTest: %d events reached the webhook in %d requests (%d sent again)%n",
        arrived.size(), requests.size(), requests.size() - arrived.size());
  }

  /**
   * Orders closed a sweep's grace after their deadline or later, as the sweep closes them, with the node that created
   * each: what to look for in the nodes' logs.
   */
  private static String closedAGraceLate(java.sql.Timestamp deadFrom, Set<Integer> victimShards) {
    return Sql.rows("SELECT id, shard, (id >> " + ordertimeout.order.OrderIds.SEQUENCE_BITS + ") & 1023 AS created_by, "
            + "(extract(epoch FROM created_at - ?) * 1000)::bigint AS created_after_kill_ms, close_at, closed_at "
            + "FROM orders WHERE close_reason = 'TIMEOUT' AND closed_at >= close_at + ? * interval '1 second' ORDER BY id",
            deadFrom, SWEEP_GRACE_SECONDS).stream()
        .map(row -> row + (victimShards.contains(((Number) row.get("shard")).intValue())
            ? " (a shard of the killed node)" : " (a kept shard)"))
        .collect(Collectors.joining("; "));
  }

  /** The worst lateness of the timeout closes due after {@code after} on the shards {@code shardCondition} selects. */
  private static long latenessMillis(String shardCondition, Instant after) {
    Object worst = Sql.rows("SELECT coalesce(max(extract(epoch FROM closed_at - close_at) * 1000), 0)::bigint AS worst FROM orders "
        + "WHERE close_reason = 'TIMEOUT' AND close_at >= ? AND " + shardCondition, java.sql.Timestamp.from(after)).get(0).get("worst");
    return ((Number) worst).longValue();
  }

  /**
   * Creates the orders from 32 threads, round robin over the nodes still alive, and pays every fifth
   * and cancels every tenth (another one) right after its create, through the next node. A request
   * that fails on a dead node is sent again to a live one with the same idempotency key, so each
   * order is created once whether or not the dead node had committed it.
   */
  private static final class Load implements Runnable {
    final AtomicInteger created = new AtomicInteger();
    final AtomicInteger retried = new AtomicInteger();
    /** Requests answered 503 (not served, nothing stored) and sent again, as a client does when the nodes are loaded. */
    final AtomicInteger unserved = new AtomicInteger();
    final Set<String> paid = ConcurrentHashMap.newKeySet();
    final Set<String> cancelled = ConcurrentHashMap.newKeySet();
    /** Orders a pay or a cancel was sent for: a pay that finds its order due closes it as a timeout itself. */
    final Set<String> asked = ConcurrentHashMap.newKeySet();
    /** The first worker's failure, at once: waiting for the load must not outlast a load that stopped. */
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    volatile long millis;
    private final List<NodeProcess> nodes;
    private final AtomicInteger next = new AtomicInteger();
    private final long started = System.nanoTime();

    Load(List<NodeProcess> nodes) {
      this.nodes = nodes;
    }

    @Override
    public void run() {
      ExecutorService workers = Executors.newFixedThreadPool(32);
      List<Future<?>> done = new ArrayList<>();
      for (int worker = 0; worker < 32; worker++) {
        done.add(workers.submit(() -> {
          try {
            for (int i = next.getAndIncrement(); i < ORDERS && failure.get() == null; i = next.getAndIncrement()) {
              orderLifecycle(i);
            }
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
          }
          return null;
        }));
      }
      try {
        for (Future<?> worker : done) {
          worker.get();
        }
      } catch (Exception e) {
        failure.compareAndSet(null, e);
      } finally {
        workers.shutdownNow();
        millis = (System.nanoTime() - started) / 1_000_000;
      }
    }

    /** True while no worker has failed; a failed one fails the caller with its cause. */
    boolean stillRunning() {
      Throwable failed = failure.get();
      if (failed != null) {
        throw new AssertionError("the load stopped: " + failed, failed);
      }
      return true;
    }

    private void orderLifecycle(int i) throws Exception {
      Random random = new Random(i);
      JsonArray items = new JsonArray();
      int firstSku = random.nextInt(SKUS);
      for (int item = 0, count = 1 + random.nextInt(3); item < count; item++) {
        items.add(new JsonObject().put("sku", "SKU-" + (firstSku + item * 331) % SKUS).put("qty", 1 + random.nextInt(2)));
      }
      JsonObject body = new JsonObject().put("userId", "u-" + random.nextInt(2_000)).put("items", items)
          .put("timeoutSeconds", 8 + random.nextInt(12));
      HttpResponse<String> response = send(i, "/v1/orders", body.encode(), UUID.randomUUID().toString());
      assertThat(response.statusCode()).as(response.body()).isEqualTo(201);
      String id = new JsonObject(response.body()).getString("id");
      created.incrementAndGet();
      if (i % 5 == 0 || i % 10 == 1) {
        asked.add(id);
      }
      if (i % 5 == 0) {
        HttpResponse<String> pay = send(i + 1, "/v1/orders/" + id + "/pay", null, null);
        if (succeeded(pay)) {
          paid.add(id);
        }
      } else if (i % 10 == 1) {
        HttpResponse<String> cancel = send(i + 1, "/v1/orders/" + id + "/cancel", null, null);
        // a cancel after the deadline answers the order as the timeout closed it
        if (succeeded(cancel) && new JsonObject(cancel.body()).getString("closeReason").equals("USER_CANCELLED")) {
          cancelled.add(id);
        }
      }
    }

    /** POSTs to node {@code nodeIndex} (modulo the live ones), moving on to the next live node when one is unreachable. */
    private HttpResponse<String> send(int nodeIndex, String path, String json, String idempotencyKey) throws Exception {
      int unreachable = 0;
      int answered503 = 0;
      for (int attempt = 0; ; attempt++) {
        List<NodeProcess> live = nodes.stream().filter(NodeProcess::isAlive).toList();
        NodeProcess node = live.get(Math.floorMod(nodeIndex + attempt, live.size()));
        HttpRequest.Builder request = HttpRequest.newBuilder(uri(node, path))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + Api.USER_KEY)
            .POST(json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        if (json != null) {
          request.header("Content-Type", "application/json");
        }
        if (idempotencyKey != null) {
          request.header("Idempotency-Key", idempotencyKey);
        }
        try {
          HttpResponse<String> response = HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
          if (response.statusCode() == 409 && response.body().contains("request_in_progress")) {
            retried.incrementAndGet(); // the same key is still held by a transaction of the killed node
            Thread.sleep(100);
            continue;
          }
          if (response.statusCode() == 503 && answered503++ < UNSERVED_RETRIES) {
            unserved.incrementAndGet(); // overloaded, row_locked, transaction_conflict...: not served, nothing stored
            Thread.sleep(100);
            continue;
          }
          return response;
        } catch (IOException nodeDown) {
          assertThat(++unreachable).as("attempts for %s on a node that did not answer", path).isLessThan(10);
          retried.incrementAndGet();
          Thread.sleep(50);
        }
      }
    }
  }

  private static boolean succeeded(HttpResponse<String> response) {
    if (response.statusCode() == 409) {
      assertThat(new JsonObject(response.body()).getString("code")).isEqualTo("order_closed");
      return false;
    }
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    return true;
  }

  private static URI uri(NodeProcess node, String path) {
    return URI.create("http://127.0.0.1:" + node.port() + path);
  }

  /** How many times the node loaded shards into its wheel. */
  private static double reloads(NodeProcess node) {
    return new Prometheus(node.metrics()).sum("ordertimeout_wheel_reload_seconds_count");
  }

  private static Set<Integer> owned(NodeProcess node) {
    return node.stats().getJsonArray("ownedShards").stream().map(shard -> ((Number) shard).intValue()).collect(Collectors.toSet());
  }

  private static Set<Integer> ownedByAll(List<NodeProcess> nodes) {
    Set<Integer> all = new HashSet<>();
    for (NodeProcess node : nodes) {
      if (!node.ready() && !node.isAlive()) {
        continue;
      }
      try {
        all.addAll(owned(node));
      } catch (RuntimeException notUpYet) {
        return Set.of();
      }
    }
    return all;
  }

}
