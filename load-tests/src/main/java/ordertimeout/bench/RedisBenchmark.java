package ordertimeout.bench;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.LocalCodec;
import ordertimeout.bus.PermitGrant;
import ordertimeout.bus.PermitRequest;
import ordertimeout.config.AppConfig;
import ordertimeout.limit.LimiterVerticle;
import ordertimeout.redis.RedisHealth;
import ordertimeout.support.TestRedis;
import ordertimeout.timer.TimeWheel;
import org.HdrHistogram.Histogram;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongUnaryOperator;

/**
 * Does a Redis keyspace-expiry listener earn a place next to the wheel as a fast path for deadlines? Against a
 * real redis-server (6.2, {@code notify-keyspace-events Ex}) on loopback, in the same run as the in-process
 * {@link TimeWheel} (10 ms tick, advanced by a Vert.x timer as the timer verticle does) given the same due times:
 * <ul>
 *   <li>same second: N keys (SET ... PXAT due) due within one second, a subscriber on {@code __keyevent@0__:expired};
 *   lateness = arrival of the notification - due time (one machine, one clock), p50/p99/max and how many arrived;</li>
 *   <li>spread: N keys due uniformly over {@value #SPREAD_SECONDS} s;</li>
 *   <li>same second with {@code hz 1} (Redis deletes expired keys, and so notifies, only when a key is read (lazy)
 *   or its active-expiry cycle samples it, {@code hz} times a second);</li>
 *   <li>disconnected: {@value #DISCONNECTED_KEYS} keys expire while the subscriber is disconnected; how many of their
 *   notifications arrive after it reconnects (pub/sub keeps nothing for absent subscribers);</li>
 *   <li>the cost of the cluster-wide limiter: permits through the real {@link LimiterVerticle} over the event bus, with
 *   the node-local bucket and with the Redis bucket (one EVALSHA round trip each), 64 requests in flight.</li>
 * </ul>
 * Arguments: keys per expiry case (100000), permit requests (50000).
 */
public final class RedisBenchmark {
  static final int SPREAD_SECONDS = 30;
  static final int DISCONNECTED_KEYS = 10_000;
  private static final String CHANNEL = "__keyevent@0__:expired";
  /** The keys are set this long before the first is due, so that setting them never overlaps their expiry. */
  private static final long LEAD_MILLIS = 4_000;
  private static final long QUIET_MILLIS = 15_000;
  private static final int SET_BATCH = 1000;
  private static final int IN_FLIGHT = 64;

  private final Vertx vertx = Vertx.vertx();
  private final TestRedis server;
  private final Redis client;

  private RedisBenchmark(TestRedis server) {
    this.server = server;
    this.client = Redis.createClient(vertx, server.url());
  }

  public static void main(String[] args) throws Exception {
    int keys = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    int permits = args.length > 1 ? Integer.parseInt(args[1]) : 50_000;
    try (TestRedis server = TestRedis.start("--notify-keyspace-events", "Ex")) {
      RedisBenchmark bench = new RedisBenchmark(server);
      try {
        bench.run(keys, permits);
      } finally {
        await(bench.vertx.close());
      }
    }
    System.exit(0);
  }

  private void run(int keys, int permits) throws Exception {
    String version = await(client.send(Request.cmd(Command.INFO).arg("server"))).toString().lines()
        .filter(line -> line.startsWith("redis_version:")).findFirst().orElse("?").substring("redis_version:".length()).trim();
    SplittableRandom random = new SplittableRandom(42);
    JsonObject sameSecond = expiry("same second, hz 10", keys, offset -> random.nextLong(1000));
    JsonObject spread = expiry("spread over " + SPREAD_SECONDS + " s, hz 10", keys, offset -> random.nextLong(SPREAD_SECONDS * 1000L));
    config("hz", "1");
    JsonObject lazy = expiry("same second, hz 1", keys, offset -> random.nextLong(1000));
    config("hz", "10");
    JsonObject disconnected = disconnected();
    JsonObject limiter = limiter(permits);

    JsonObject result = Results.header("redis-expiry")
        .put("redis", version)
        .put("keys", keys)
        .put("how", "keys SET with PXAT due times, set " + LEAD_MILLIS + " ms before the first is due; one subscriber "
            + "connection on " + CHANNEL + "; lateness = arrival - due (ms, same clock). The wheel gets the same due times "
            + "in the same run (its own event loop, advance() every 10 ms), its lateness = when advance() hands the id out - due. "
            + "Notifications are waited for until all arrived or none came for " + QUIET_MILLIS / 1000 + " s after the last due time")
        .put("sameSecond", sameSecond)
        .put("spread", spread)
        .put("sameSecondHz1", lazy)
        .put("disconnected", disconnected)
        .put("limiter", limiter);
    Results.write("redis-expiry", result);
    System.out.println(String.format(Locale.ROOT,
        "redis-expiry: same second (%d keys): redis arrived %d, p50 %d ms, p99 %d ms, max %d ms; wheel p50 %d, p99 %d, max %d ms | "
            + "spread %d s: redis p99 %d ms, max %d; wheel p99 %d, max %d | hz 1: redis p99 %d ms, max %d | "
            + "expired while disconnected: %d of %d notifications lost | permits/s local %.0f (p99 %.2f ms), redis %.0f (p99 %.2f ms)",
        keys, sameSecond.getJsonObject("redis").getLong("arrived"),
        p(sameSecond, "redis", "p50"), p(sameSecond, "redis", "p99"), p(sameSecond, "redis", "max"),
        p(sameSecond, "wheel", "p50"), p(sameSecond, "wheel", "p99"), p(sameSecond, "wheel", "max"),
        SPREAD_SECONDS, p(spread, "redis", "p99"), p(spread, "redis", "max"), p(spread, "wheel", "p99"), p(spread, "wheel", "max"),
        p(lazy, "redis", "p99"), p(lazy, "redis", "max"),
        disconnected.getLong("lost"), disconnected.getLong("expired"),
        limiter.getJsonObject("local").getDouble("perSecond"), limiter.getJsonObject("local").getDouble("p99Millis"),
        limiter.getJsonObject("redis").getDouble("perSecond"), limiter.getJsonObject("redis").getDouble("p99Millis")));
  }

  private static long p(JsonObject result, String side, String field) {
    return result.getJsonObject(side).getLong(field);
  }

  /** One expiry case: N keys and N wheel timers with the same due times, both measured in the same run. */
  private JsonObject expiry(String name, int keys, LongUnaryOperator dueOffset) throws Exception {
    await(client.send(Request.cmd(Command.FLUSHALL)));
    long base = System.currentTimeMillis() + LEAD_MILLIS;
    long[] due = new long[keys];
    long lastDue = 0;
    for (int i = 0; i < keys; i++) {
      due[i] = base + dueOffset.applyAsLong(i);
      lastDue = Math.max(lastDue, due[i]);
    }
    Histogram redisLateness = new Histogram(3_600_000, 3);
    AtomicInteger arrived = new AtomicInteger();
    RedisConnection subscriber = subscribe((key, at) -> {
      long dueAt = Long.parseLong(key.substring(key.lastIndexOf(':') + 1));
      redisLateness.recordValue(Math.max(0, at - dueAt));
      arrived.incrementAndGet();
    });

    Histogram wheelLateness = new Histogram(3_600_000, 3);
    AtomicInteger fired = new AtomicInteger();
    Vertx wheelVertx = Vertx.vertx();
    Promise<Void> wheelDone = Promise.promise();
    wheelVertx.runOnContext(none -> {
      TimeWheel wheel = new TimeWheel(TimeWheel.DEFAULT_TICK_MILLIS, System.currentTimeMillis(), keys);
      for (int i = 0; i < keys; i++) {
        wheel.schedule(i + 1, due[i], TimeWheel.CLOSE);
      }
      wheelVertx.setPeriodic(TimeWheel.DEFAULT_TICK_MILLIS, id -> {
        long now = System.currentTimeMillis();
        wheel.advance(now, 4000, (kind, ids, count) -> {
          for (int j = 0; j < count; j++) {
            wheelLateness.recordValue(Math.max(0, now - due[(int) ids[j] - 1]));
          }
          fired.addAndGet(count);
        });
        if (fired.get() == keys) {
          wheelVertx.cancelTimer(id);
          wheelDone.tryComplete();
        }
      });
    });

    long setStart = System.nanoTime();
    setKeys(due);
    long setMillis = (System.nanoTime() - setStart) / 1_000_000;
    if (System.currentTimeMillis() >= base) {
      throw new IllegalStateException("setting the keys took " + setMillis + " ms, past the first due time: raise LEAD_MILLIS");
    }
    long lastArrival = System.currentTimeMillis();
    int seen = 0;
    while (arrived.get() < keys) {
      Thread.sleep(50);
      long now = System.currentTimeMillis();
      if (arrived.get() != seen) {
        seen = arrived.get();
        lastArrival = now;
      } else if (now > lastDue && now - Math.max(lastArrival, lastDue) > QUIET_MILLIS) {
        break;
      }
    }
    await(wheelDone.future().timeout(60, TimeUnit.SECONDS));
    await(wheelVertx.close());
    await(subscriber.close());
    long remaining = await(client.send(Request.cmd(Command.DBSIZE))).toLong();
    JsonObject result = new JsonObject()
        .put("case", name)
        .put("setMillis", setMillis)
        .put("redis", percentiles(redisLateness).put("arrived", arrived.get()).put("keysLeftInRedis", remaining))
        .put("wheel", percentiles(wheelLateness).put("arrived", fired.get()));
    System.out.println(name + ": " + result.encode());
    return result;
  }

  /** Keys expire while the subscriber is away: do their notifications come when it is back? */
  private JsonObject disconnected() throws Exception {
    await(client.send(Request.cmd(Command.FLUSHALL)));
    AtomicInteger before = new AtomicInteger();
    RedisConnection first = subscribe((key, at) -> before.incrementAndGet());
    await(first.close());
    long dueAt = System.currentTimeMillis() + 1000;
    long[] due = new long[DISCONNECTED_KEYS];
    java.util.Arrays.fill(due, dueAt);
    setKeys(due);
    long deadline = System.currentTimeMillis() + 30_000;
    while (await(client.send(Request.cmd(Command.DBSIZE))).toLong() > 0) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("the keys did not expire within 30 s");
      }
      Thread.sleep(100);
    }
    AtomicInteger after = new AtomicInteger();
    RedisConnection again = subscribe((key, at) -> after.incrementAndGet());
    Thread.sleep(5_000);
    await(again.close());
    JsonObject result = new JsonObject()
        .put("expired", DISCONNECTED_KEYS)
        .put("receivedAfterReconnect", after.get() + before.get())
        .put("lost", DISCONNECTED_KEYS - after.get() - before.get())
        .put("how", "subscribe, unsubscribe by closing the connection, set the keys due in 1 s, wait until DBSIZE is 0 "
            + "(all expired and deleted), subscribe again and listen for 5 s");
    System.out.println("disconnected: " + result.encode());
    return result;
  }

  /** Permits through the real limiter verticle: the local bucket, then the Redis bucket, the same requests. */
  private JsonObject limiter(int requests) throws Exception {
    AppConfig.Limits limits = new AppConfig.Limits(0, 1000);
    AppConfig.Clients clients = new AppConfig.Clients(
        new AppConfig.ClientLimits(Long.MAX_VALUE, Long.MAX_VALUE, 3600, 10_000_000, 10_000_000), Map.of());
    JsonObject local = permits("local", limits, clients, null, requests);
    JsonObject redis = permits("redis", limits, clients,
        new RedisHealth(new SimpleMeterRegistry(), new AppConfig.Redis(server.url(), "bench", 1000, AppConfig.WhenUnreachable.LOCAL, 30)),
        requests);
    return new JsonObject().put("local", local).put("redis", redis)
        .put("how", "PermitRequest(creates:<one of 16 clients>, 1) over the event bus to a fresh LimiterVerticle (rate and burst "
            + "10,000,000, so all are granted), " + IN_FLIGHT + " requests in flight, after a warm-up of the same size; "
            + "latency from the request to its reply");
  }

  private JsonObject permits(String name, AppConfig.Limits limits, AppConfig.Clients clients, RedisHealth health, int requests)
      throws Exception {
    Vertx node = Vertx.vertx();
    try {
      LocalCodec.registerAll(node);
      await(node.deployVerticle(new LimiterVerticle(limits, clients, health)));
      drive(node, requests, new Histogram(60_000_000_000L, 3));
      Histogram latency = new Histogram(60_000_000_000L, 3);
      long start = System.nanoTime();
      drive(node, requests, latency);
      double seconds = (System.nanoTime() - start) / 1e9;
      JsonObject result = new JsonObject()
          .put("perSecond", Results.round(requests / seconds))
          .put("p50Millis", Results.round(latency.getValueAtPercentile(50) / 1e6))
          .put("p99Millis", Results.round(latency.getValueAtPercentile(99) / 1e6))
          .put("maxMillis", Results.round(latency.getMaxValue() / 1e6))
          .put("fallbacks", health == null ? 0 : health.fallbacks(RedisHealth.CREATES));
      System.out.println("permits " + name + ": " + result.encode());
      return result;
    } finally {
      await(node.close());
    }
  }

  private static void drive(Vertx node, int requests, Histogram latency) throws Exception {
    Promise<Void> done = Promise.promise();
    AtomicInteger sent = new AtomicInteger();
    AtomicInteger answered = new AtomicInteger();
    node.runOnContext(none -> {
      for (int i = 0; i < IN_FLIGHT; i++) {
        sendOne(node, requests, sent, answered, latency, done);
      }
    });
    await(done.future());
  }

  private static void sendOne(Vertx node, int requests, AtomicInteger sent, AtomicInteger answered, Histogram latency,
                              Promise<Void> done) {
    int n = sent.getAndIncrement();
    if (n >= requests) {
      return;
    }
    long start = System.nanoTime();
    node.eventBus().<PermitGrant>request(Addresses.LIMITER_ACQUIRE, new PermitRequest(LimiterVerticle.CREATES_PREFIX + "c" + n % 16, 1))
        .onComplete(reply -> {
          if (reply.failed() || reply.result().body().granted() != 1) {
            done.tryFail(reply.failed() ? reply.cause() : new IllegalStateException("not granted"));
            return;
          }
          latency.recordValue(System.nanoTime() - start);
          if (answered.incrementAndGet() == requests) {
            done.tryComplete();
          } else {
            sendOne(node, requests, sent, answered, latency, done);
          }
        });
  }

  private interface Arrival {
    void expired(String key, long atMillis);
  }

  /** A connection of its own, subscribed to the expired-key events of db 0. */
  private RedisConnection subscribe(Arrival arrival) throws Exception {
    RedisConnection connection = await(client.connect());
    connection.handler(message -> {
      long at = System.currentTimeMillis();
      if (message.size() == 3 && "message".equals(message.get(0).toString())) {
        arrival.expired(message.get(2).toString(), at);
      }
    });
    await(connection.send(Request.cmd(Command.SUBSCRIBE).arg(CHANNEL)));
    return connection;
  }

  /** SET x:<i>:<due> 1 PXAT <due>, pipelined in batches. */
  private void setKeys(long[] due) throws Exception {
    List<Future<?>> batches = new ArrayList<>();
    for (int from = 0; from < due.length; from += SET_BATCH) {
      List<Request> batch = new ArrayList<>();
      for (int i = from; i < Math.min(due.length, from + SET_BATCH); i++) {
        batch.add(Request.cmd(Command.SET).arg("x:" + i + ":" + due[i]).arg("1").arg("PXAT").arg(due[i]));
      }
      batches.add(client.batch(batch));
      if (batches.size() == 8) {
        await(Future.all(batches));
        batches.clear();
      }
    }
    await(Future.all(batches));
  }

  private void config(String key, String value) throws Exception {
    await(client.send(Request.cmd(Command.CONFIG).arg("SET").arg(key).arg(value)));
  }

  private static JsonObject percentiles(Histogram histogram) {
    return new JsonObject()
        .put("p50", histogram.getValueAtPercentile(50))
        .put("p99", histogram.getValueAtPercentile(99))
        .put("p999", histogram.getValueAtPercentile(99.9))
        .put("max", histogram.getMaxValue());
  }

  private static <T> T await(Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(120, TimeUnit.SECONDS);
  }
}
