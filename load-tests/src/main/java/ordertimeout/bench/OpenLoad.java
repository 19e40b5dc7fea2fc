package ordertimeout.bench;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import org.HdrHistogram.Histogram;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A light open-model load generator for the steady-state benchmark: creates at a fixed rate scheduled by
 * the clock, each order with a timeout of 5-15 s, and 60% of them paid at a random moment before their
 * deadline (after the create's response, a pause of up to timeout - 1 s: what the Gatling simulation does).
 *
 * <p>Create {@code i} is due at {@code start + i / rate}. A timer set for the next create's due time (at least
 * 1 ms ahead) sends every create that is due by then, whatever is still in flight: a slow response never slows the
 * schedule. Every latency is taken from the moment the request was due (not from when it was written), so time spent
 * waiting for the generator's timer or for a free connection counts against the service, as it would for a real
 * client.
 * Creates that could not be sent on time are counted: written more than {@value #LATE_MILLIS} ms after
 * they were due, whether for want of a free connection (all of them busy with slow responses) or because
 * the timer came late (the generator itself was starved of CPU; counted on its own too).
 *
 * <p>Status reads go over connections of their own ({@link StatusReads}), written and parsed without Vert.x's HTTP
 * client: each order's reads at random moments of its life, and fixed-rate reads (read {@code i} due at
 * {@code start + i / readsPerSecond} once the warm-up's ramp is over: {@link #fixedRateReadDueAt}) sent by the same
 * timer, which then wakes every millisecond: a read waits up to 1 ms for it, counted in its latency.
 *
 * <p>A warm-up comes first: {@code warmupSeconds} of the same load at the same rate (the fixed-rate reads rising to
 * theirs over its first half), so that the JIT has compiled the service's paths (and the generator's) before the
 * measured schedule starts, and the measured seconds already see the pays and closes of the orders before them.
 * Nothing of the warm-up is counted in the result but its seconds ({@link Result#warmupPerSecond}); its orders still
 * close or get paid meanwhile. At a quarter of the rate for 10 s, as it was until 2026-12-04, the C2 compiler still
 * took 0.47 cores at the measured schedule's start and about a third of the JVM's CPU over it (600 creates/s).
 *
 * <p>It runs on a Vert.x instance of its own with one event loop, so all its state is confined to one
 * thread (plain HdrHistograms, no locks), in the JVM of the service under test: the generator thread's
 * own CPU time is measured and reported ({@link Result#cpuSeconds}): about 0.2 cores at 2,000 creates/s
 * with their pays. A separate JVM was not built: it would do the
 * same work plus a JIT and a GC of its own on the same two cores. Pipelining ({@code pipelining} above 1)
 * was measured worse: at 600/s, 16 connections pipelining 4 gave a create p99 of 988 ms against 127-141 ms
 * on 64 plain keep-alive connections (a slow create holds up the requests queued behind it), for the same CPU.
 */
final class OpenLoad {
  static final int LATE_MILLIS = 10;
  static final int SKUS = 1000;
  /** The fixed-rate reads' orders were created at most this long ago: about an order's life (5-15 s). */
  private static final int RECENT_SECONDS = 10;
  private static final long LATE_NANOS = TimeUnit.MILLISECONDS.toNanos(LATE_MILLIS);
  private static final long HIGHEST_MICROS = TimeUnit.MINUTES.toMicros(10);

  /**
   * Rate, duration, pool size and pipelining, the SKUs ({@code skuPrefix} and 0 to {@code skus} - 1, by default
   * {@value #SKUS}), and the status reads: {@code readsPerOrder} of each order, each at a random moment of its life
   * (a buyer's page polling it), and {@code readsPerSecond} more at a fixed rate, each of an order drawn from those
   * created in the last 10 s (the orders still open, or just paid or closed); the rest of the orders' shape is fixed
   * (5-15 s, 60% paid, 1 item of a SKU drawn at random). {@code ports}: the nodes' HTTP ports; creates go to each in turn, a pay
   * or read to any of them at random (a cluster behind a load balancer). {@code connections} is per node, and the
   * reads have as many of their own ({@link StatusReads}). {@code warmupRatePerSecond}: creates per second over the
   * warm-up's first half when above {@code ratePerSecond}.
   */
  record Settings(String host, List<Integer> ports, int ratePerSecond, int seconds, int warmupSeconds, int connections,
                  int pipelining, String skuPrefix, int skus, int readsPerOrder, int readsPerSecond,
                  int warmupRatePerSecond) {
    Settings(String host, List<Integer> ports, int ratePerSecond, int seconds, int warmupSeconds, int connections,
             int pipelining, String skuPrefix, int readsPerOrder) {
      this(host, ports, ratePerSecond, seconds, warmupSeconds, connections, pipelining, skuPrefix, SKUS,
          readsPerOrder, 0, 0);
    }

    Settings(String host, int port, int ratePerSecond, int seconds, int warmupSeconds, int connections, int pipelining,
             String skuPrefix, int readsPerOrder) {
      this(host, List.of(port), ratePerSecond, seconds, warmupSeconds, connections, pipelining, skuPrefix,
          readsPerOrder);
    }
  }

  /**
   * What the measured schedule saw (the warm-up is counted only in {@code warmupPerSecond}). Latencies in
   * microseconds, from the moment each request was due. {@code elapsedSeconds}: from the warm-up's start to the last
   * answer. {@code perSecond}: from the measured schedule's start to the last answer, per second: creates and pays
   * written ("create sent", "pay sent", "read sent": when written, so a wait for a connection shows), answered
   * ("create answered", ...) and failed ("create errors", ...), and their latency p50/p99 ("create", "pay", "read") by
   * the second each request was due; {@code warmupPerSecond} the same of the warm-up's requests, from its start.
   * {@code staleReads}: reads sent after their order's pay was answered 200 that did not say PAID (must be 0).
   * {@code readsLateByScheduler}: fixed-rate reads the generator's timer sent more than {@value #LATE_MILLIS} ms after
   * they were due (its thread starved of CPU).
   */
  record Result(long planned, long sent, long created, long createErrors, Map<String, Long> createErrorsByKind,
                long lateByScheduler, long lateSends,
                long paysPlanned, long paid, long payRefusedClosed, long payErrors, Map<String, Long> payErrorsByKind,
                long readsPlanned, long reads, long readErrors, long staleReads, long readsLateByScheduler,
                Histogram createMicros, Histogram payMicros, Histogram readMicros, Histogram sendDelayMicros,
                double elapsedSeconds, double cpuSeconds, long sentWhileMarked, long measuredFromMillis,
                PerSecond perSecond, PerSecond warmupPerSecond) {

    JsonObject toJson() {
      return new JsonObject()
          .put("planned", planned).put("sent", sent).put("created", created)
          .put("createErrors", createErrors).put("createErrorsByKind", new JsonObject(Map.copyOf(createErrorsByKind)))
          .put("lateByScheduler", lateByScheduler).put("lateSends", lateSends)
          .put("paysPlanned", paysPlanned).put("paid", paid).put("payRefusedClosed", payRefusedClosed)
          .put("payErrors", payErrors).put("payErrorsByKind", new JsonObject(Map.copyOf(payErrorsByKind)))
          .put("readsPlanned", readsPlanned).put("reads", reads).put("readErrors", readErrors).put("staleReads", staleReads)
          .put("readsLateByScheduler", readsLateByScheduler)
          .put("createLatencyMs", percentiles(createMicros))
          .put("payLatencyMs", percentiles(payMicros))
          .put("readLatencyMs", percentiles(readMicros))
          .put("sendDelayMs", percentiles(sendDelayMicros))
          .put("elapsedSeconds", Results.round(elapsedSeconds))
          .put("measuredFromMillis", measuredFromMillis)
          .put("generatorCpuSeconds", Results.round(cpuSeconds))
          .put("sentWhileMarked", sentWhileMarked)
          .put("perSecond", perSecond.toJson())
          .put("warmupPerSecond", warmupPerSecond.toJson());
    }

    static JsonObject percentiles(Histogram h) {
      return new JsonObject().put("count", h.getTotalCount())
          .put("p50", ms(h.getValueAtPercentile(50))).put("p99", ms(h.getValueAtPercentile(99)))
          .put("p999", ms(h.getValueAtPercentile(99.9))).put("max", ms(h.getMaxValue()));
    }

    static double ms(long micros) {
      return Math.round(micros / 100.0) / 10.0;
    }
  }

  private final Settings settings;
  private final Vertx vertx;
  private final HttpClientAgent client;
  private final StatusReads statusReads;
  private final SplittableRandom random = new SplittableRandom();
  private final String keyPrefix = "ss-" + Long.toHexString(System.nanoTime()) + "-";
  private final Promise<Void> finished = Promise.promise();
  /** Orders whose pay was answered 200: a read sent after that must say PAID. */
  private final Set<String> paidIds = new HashSet<>();
  /**
   * The warm-up's tally (counted as the measured one is, and dropped) and the measured schedule's, in that order: a
   * request picks its phase's by index ({@link #phase}), without a branch that flips when the window begins.
   */
  private final Tally[] tallies = new Tally[2];
  private Tally measured;
  private long planned;
  private long warmupCount;
  private long warmupNanos;
  private long measuredFromMillis;
  /** Creates sent, the warm-up's first: the measured schedule's are those from {@code warmupCount} on. */
  private long createsSent;
  /**
   * The warm-up's first half may send creates faster ({@code boostRate}, its first {@code createsInBoost}): at 100
   * creates/s their code (the group commit, the pays, the closes) was still being compiled by C2 in the measured
   * window after 60 s, 200-400 ms of a core per method, and the reads' slow seconds fell on those compilations
   * (async-profiler and JFR, 2026-12-06). A service that took orders all day has them compiled.
   */
  private long boostNanos;
  private long boostRate;
  private long createsInBoost;
  /**
   * The fixed-rate reads, planned over the warm-up and the measured schedule, and those sent so far. Their rate rises
   * from 0 over the warm-up's first half ({@code readsRampNanos}, its first {@code readsInRamp} reads): at 20,000/s
   * from the first second, on a JVM that had compiled nothing yet, they queued for 3-10 s (five runs of five), and in
   * one of them the queue was still there when the window began (2026-12-06, {@code warmupPerSecond}); with the ramp
   * the warm-up's worst second had a p99 of 59-533 ms (twelve runs).
   */
  private long readsRampNanos;
  private long readsInRamp;
  private long fixedRateReadsPlanned;
  private long fixedRateReadsSent;
  /** The orders created last, a ring: the fixed-rate reads draw from them. */
  private final String[] recentOrders;
  private long remembered;
  private long outstanding;
  private long startNanos;
  private boolean schedulingDone;
  private long threadId;
  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
  private Duration marksLead;
  private Runnable atMarks;
  private Runnable atScheduleEnd;
  private long cpuAtMarks = -1;
  private long createsSentAtMarks;
  private long cpuNanos;

  /**
   * The counts, latencies and per-second series of one phase, the warm-up or the measured schedule. Each request
   * records into its phase's, through the same code: when the warm-up recorded nothing, the JIT compiled the
   * generator's answer handlers without the measured branch, and took them back to the interpreter when the window
   * began (JFR's deoptimization events, 2026-12-05), so that the generator fell behind in the window's first
   * seconds (2,000 of its 20,000 reads a second sent late, their p50 95 ms).
   */
  private static final class Tally {
    final Histogram createMicros = new Histogram(HIGHEST_MICROS, 3);
    final Histogram payMicros = new Histogram(HIGHEST_MICROS, 3);
    final Histogram readMicros = new Histogram(HIGHEST_MICROS, 3);
    final Histogram sendDelayMicros = new Histogram(HIGHEST_MICROS, 3);
    final Map<String, Long> createErrorsByKind = new TreeMap<>();
    final Map<String, Long> payErrorsByKind = new TreeMap<>();
    final PerSecond perSecond;
    long created;
    long createErrors;
    long lateSends;
    long createsLateByScheduler;
    long paysPlanned;
    long paid;
    long payRefusedClosed;
    long payErrors;
    long readsPlanned;
    long reads;
    long readErrors;
    long staleReads;
    long readsLateByScheduler;

    Tally(PerSecond perSecond) {
      this.perSecond = perSecond;
    }
  }

  private OpenLoad(Settings settings) {
    this.settings = settings;
    this.vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(1)
        .setInternalBlockingPoolSize(1).setPreferNativeTransport(true));
    this.client = vertx.createHttpClient(
        new HttpClientOptions().setDefaultHost(settings.host()).setDefaultPort(settings.ports().get(0))
            // lets go of a connection idle for 20 s: the service closes one idle for 30 (http.requestReadTimeoutSeconds),
            // and a create sent on it as it closes fails (HttpClosedException; two creates in one run of 2026-12-05)
            .setKeepAlive(true).setKeepAliveTimeout(20).setTcpNoDelay(true)
            .setPipelining(settings.pipelining() > 1).setPipeliningLimit(Math.max(1, settings.pipelining())),
        new PoolOptions().setHttp1MaxSize(settings.connections()).setMaxWaitQueueSize(-1));
    this.statusReads = new StatusReads(vertx, settings.host(), settings.ports(), "dev-user-key");
    this.recentOrders = new String[Math.max(1, settings.ratePerSecond() * RECENT_SECONDS)];
  }

  /** Runs the schedule to its end and waits for every create and pay to be answered (a minute at most after the last one). */
  static Result run(Settings settings) throws Exception {
    return run(settings, () -> {}, () -> {});
  }

  /** {@link #run(Settings, Duration, Runnable, Runnable)} with the marks taken when the measured schedule starts. */
  static Result run(Settings settings, Runnable atMeasuredStart, Runnable atScheduleEnd) throws Exception {
    return run(settings, Duration.ZERO, atMeasuredStart, atScheduleEnd);
  }

  /**
   * {@code atMarks} runs {@code marksLead} before the measured schedule starts (within the warm-up: at its start when
   * the lead is longer), {@code atScheduleEnd} when the schedule's last create has been sent (before the answers and
   * the pays still to come): both on the generator's thread, so they must be quick. {@link Result#cpuSeconds} is the
   * generator thread's CPU time between the two, {@link Result#sentWhileMarked} the creates sent between them.
   */
  static Result run(Settings settings, Duration marksLead, Runnable atMarks, Runnable atScheduleEnd) throws Exception {
    OpenLoad load = new OpenLoad(settings);
    load.marksLead = marksLead;
    load.atMarks = atMarks;
    load.atScheduleEnd = atScheduleEnd;
    try {
      return load.runToEnd();
    } finally {
      load.vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  private Result runToEnd() throws Exception {
    Context context = vertx.getOrCreateContext();
    Promise<Void> started = Promise.promise();
    context.runOnContext(go -> statusReads.connect(settings.connections()).onFailure(started::fail).onSuccess(open -> {
      threadId = Thread.currentThread().getId();
      started.complete();
      startNanos = System.nanoTime();
      warmupNanos = TimeUnit.SECONDS.toNanos(settings.warmupSeconds());
      boostRate = Math.max(settings.warmupRatePerSecond(), settings.ratePerSecond());
      boostNanos = boostRate > settings.ratePerSecond() ? warmupNanos / 2 : 0;
      createsInBoost = boostRate * boostNanos / 1_000_000_000L;
      warmupCount = createsInBoost + settings.ratePerSecond() * (warmupNanos - boostNanos) / 1_000_000_000L;
      measuredFromMillis = System.currentTimeMillis() + TimeUnit.NANOSECONDS.toMillis(warmupNanos);
      planned = (long) settings.ratePerSecond() * settings.seconds();
      readsRampNanos = warmupNanos / 2;
      readsInRamp = (long) (settings.readsPerSecond() * (readsRampNanos / 2e9));
      fixedRateReadsPlanned = (long) (settings.readsPerSecond()
          * (settings.warmupSeconds() + settings.seconds() - readsRampNanos / 2e9));
      tallies[0] = new Tally(perSecond(startNanos, settings.warmupSeconds() + settings.seconds() + 180, "warm-up"));
      tallies[1] = measured = new Tally(perSecond(startNanos + warmupNanos, settings.seconds() + 180,
          "second of the measured schedule (sent and answered when they were; latency by the second a request was due)"));
      long marksAtNanos = warmupNanos - Math.min(marksLead.toNanos(), warmupNanos);
      if (marksAtNanos == 0) {
        takeMarks();
      } else {
        vertx.setTimer(TimeUnit.NANOSECONDS.toMillis(marksAtNanos), id -> takeMarks());
      }
      vertx.setTimer(1, id -> sendDueAndWait());
    }));
    started.future().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    finished.future().toCompletionStage().toCompletableFuture().get(settings.seconds() + 120L, TimeUnit.SECONDS);
    Promise<Result> result = Promise.promise();
    Tally m = measured;
    context.runOnContext(done -> result.complete(new Result(planned, Math.max(0, createsSent - warmupCount),
        m.created, m.createErrors, m.createErrorsByKind, m.createsLateByScheduler, m.lateSends, m.paysPlanned,
        m.paid, m.payRefusedClosed, m.payErrors, m.payErrorsByKind, m.readsPlanned, m.reads, m.readErrors,
        m.staleReads, m.readsLateByScheduler, m.createMicros, m.payMicros, m.readMicros, m.sendDelayMicros,
        (System.nanoTime() - startNanos) / 1e9, cpuNanos / 1e9, createsSent - createsSentAtMarks, measuredFromMillis,
        m.perSecond, tallies[0].perSecond)));
    return result.future().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static PerSecond perSecond(long originNanos, int maxSeconds, String axis) {
    return new PerSecond(originNanos, maxSeconds, axis).counts("create sent", "create answered", "create errors",
        "pay sent", "pay answered", "pay errors", "read sent", "read answered", "read errors");
  }

  /**
   * Sends what is due, then sleeps until the next create or fixed-rate read is due. A tick every millisecond, as before
   * 2026-12-05, woke this loop 1,000 times a second whatever the rate: at 100 creates/s during a close storm the
   * generator's thread took 0.14-0.16 cores, and a profile of the same load put most of it in waking up
   * (async-profiler).
   */
  private void sendDueAndWait() {
    sendDue();
    if (!schedulingDone) {
      vertx.setTimer(millisUntilNextDue(), id -> sendDueAndWait());
    }
  }

  /** Rounded up, so that the timer fires once the next create or read is due; at least 1 ms. */
  private long millisUntilNextDue() {
    long nextCreateAt = createsSent < warmupCount + planned ? createDueAt(createsSent) : Long.MAX_VALUE;
    long nextReadAt = fixedRateReadsSent < fixedRateReadsPlanned
        ? fixedRateReadDueAt(fixedRateReadsSent) : Long.MAX_VALUE;
    return Math.max(1, (Math.min(nextCreateAt, nextReadAt) - System.nanoTime() + 999_999) / 1_000_000);
  }

  /**
   * Every create and fixed-rate read due by now; the schedule is the clock's, not the responses'. The warm-up and the
   * measured schedule are one sequence at one rate, so that nothing here branches otherwise when the window begins: a
   * branch that flips once makes the JIT take the method back to the interpreter then (JFR, 2026-12-05).
   */
  private void sendDue() {
    long now = System.nanoTime();
    sendFixedRateReadsDue(now);
    long due = Math.min(warmupCount + planned, createsDueBy(now - startNanos) + 1);
    for (; createsSent < due; createsSent++) {
      long dueAt = createDueAt(createsSent);
      Tally tally = tallies[phase(createsSent, warmupCount)];
      tally.createsLateByScheduler += now - dueAt > LATE_NANOS ? 1 : 0;
      create(createsSent, dueAt, tally);
    }
    if (createsSent == warmupCount + planned && fixedRateReadsSent == fixedRateReadsPlanned && !schedulingDone) {
      schedulingDone = true;
      cpuNanos = threads.getThreadCpuTime(threadId) - cpuAtMarks;
      atScheduleEnd.run();
      finishIfIdle();
    }
  }

  /**
   * Every fixed-rate read due by now ({@link #fixedRateReadDueAt}), each of an order created lately; none before the
   * first order is created.
   */
  private void sendFixedRateReadsDue(long now) {
    while (fixedRateReadsSent < fixedRateReadsPlanned) {
      long dueAt = fixedRateReadDueAt(fixedRateReadsSent);
      if (dueAt > now) {
        return;
      }
      fixedRateReadsSent++;
      String id = recentOrder();
      if (id == null) {
        continue;
      }
      Tally tally = tallies[phase(dueAt, startNanos + warmupNanos)];
      tally.readsPlanned++;
      tally.readsLateByScheduler += now - dueAt > LATE_NANOS ? 1 : 0;
      outstanding++;
      read(id, tally, dueAt);
    }
  }

  /**
   * Read {@code n}'s due time: the rate rises evenly from 0 over {@link #readsRampNanos} (the warm-up's first half),
   * then holds. {@code n * 1e9 / rate + ramp / 2} after the ramp; inside it, where {@code n = rate t^2 / (2 ramp)},
   * {@code t = sqrt(2 ramp n / rate)}: the two meet at the ramp's end.
   */
  private long fixedRateReadDueAt(long n) {
    int rate = settings.readsPerSecond();
    return n >= readsInRamp
        ? startNanos + n * 1_000_000_000L / rate + readsRampNanos / 2
        : startNanos + (long) Math.sqrt(2.0 * readsRampNanos * n * 1e9 / rate);
  }

  private long createDueAt(long n) {
    return n < createsInBoost
        ? startNanos + n * 1_000_000_000L / boostRate
        : startNanos + boostNanos + (n - createsInBoost) * 1_000_000_000L / settings.ratePerSecond();
  }

  /** How many creates are due {@code elapsed} nanoseconds after the start: {@link #createDueAt}'s inverse. */
  private long createsDueBy(long elapsed) {
    return elapsed < boostNanos
        ? elapsed * boostRate / 1_000_000_000L
        : createsInBoost + (elapsed - boostNanos) * settings.ratePerSecond() / 1_000_000_000L;
  }

  /** 0 (the warm-up) while {@code position} is before {@code measuredFrom}, 1 (measured) from it on: its sign bit. */
  private static int phase(long position, long measuredFrom) {
    return (int) ((measuredFrom - 1 - position) >>> 63);
  }

  /** On its own timer, so that the sending code has no branch for it. */
  private void takeMarks() {
    cpuAtMarks = threads.getThreadCpuTime(threadId);
    createsSentAtMarks = createsSent;
    atMarks.run();
  }

  /** One of the orders created in the last {@value #RECENT_SECONDS} s (at the schedule's rate); null before any. */
  private String recentOrder() {
    if (remembered == 0) {
      return null;
    }
    int window = (int) Math.min(remembered, recentOrders.length);
    return recentOrders[(int) ((remembered - 1 - random.nextInt(window)) % recentOrders.length)];
  }

  /** The {@code n}th create, a warm-up order or a measured one, sent, paid and read alike, counted in {@code tally}. */
  private void create(long n, long dueAt, Tally tally) {
    int timeoutSeconds = 5 + random.nextInt(11);
    boolean pays = random.nextInt(100) < 60;
    long payAfterMillis = random.nextInt((timeoutSeconds - 1) * 1000);
    String body = "{\"userId\":\"u-" + random.nextInt(100_000) + "\",\"timeoutSeconds\":" + timeoutSeconds
        + ",\"items\":[{\"sku\":\"" + settings.skuPrefix() + random.nextInt(settings.skus()) + "\",\"qty\":1}]}";
    outstanding++;
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setURI("/v1/orders")
        .setPort(settings.ports().get((int) Math.floorMod(n, (long) settings.ports().size())))
        .putHeader("Authorization", "Bearer dev-user-key")
        .putHeader("Content-Type", "application/json")
        .putHeader("Idempotency-Key", keyPrefix + n);
    send(options, Buffer.buffer(body), dueAt, "create", tally).onComplete(outcome -> {
      recordAnswer("create", tally, tally.createMicros, dueAt);
      if (outcome.succeeded() && outcome.result().status == 201) {
        tally.created++;
        String id = new JsonObject(outcome.result().body).getString("id");
        recentOrders[(int) (remembered++ % recentOrders.length)] = id;
        for (int read = 0; read < settings.readsPerOrder(); read++) {
          tally.readsPlanned++;
          outstanding++;
          vertx.setTimer(Math.max(1, random.nextInt(timeoutSeconds * 1000)),
              fire -> read(id, tally, System.nanoTime()));
        }
        if (pays) {
          tally.paysPlanned++;
          outstanding++;
          vertx.setTimer(Math.max(1, payAfterMillis), fire -> pay(id, tally));
        }
      } else {
        tally.perSecond.count("create errors", System.nanoTime());
        tally.createErrors++;
        tally.createErrorsByKind.merge(kind(outcome), 1L, Long::sum);
      }
      outstanding--;
      finishIfIdle();
    });
  }

  private void pay(String id, Tally tally) {
    long dueAt = System.nanoTime();
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setURI("/v1/orders/" + id + "/pay")
        .setPort(settings.ports().get(anyNode()))
        .putHeader("Authorization", "Bearer dev-user-key");
    send(options, null, dueAt, "pay", tally).onComplete(outcome -> {
      long answeredAt = recordAnswer("pay", tally, tally.payMicros, dueAt);
      if (outcome.succeeded() && outcome.result().status == 200) {
        tally.paid++;
        paidIds.add(id);
      } else if (outcome.succeeded() && outcome.result().status == 409) {
        tally.payRefusedClosed++;
      } else {
        tally.perSecond.count("pay errors", answeredAt);
        tally.payErrors++;
        tally.payErrorsByKind.merge(kind(outcome), 1L, Long::sum);
      }
      outstanding--;
      finishIfIdle();
    });
  }

  /** A buyer's page reading its order's status; after a pay answered 200 it must say PAID. */
  private void read(String id, Tally tally, long dueAt) {
    boolean paidBefore = paidIds.contains(id);
    statusReads.read(anyNode(), id, (writtenAt, status, saysPaid) -> {
      tally.perSecond.count("read sent", writtenAt);
      long answeredAt = recordAnswer("read", tally, tally.readMicros, dueAt);
      if (status == 200) {
        tally.reads++;
        tally.staleReads += paidBefore && !saysPaid ? 1 : 0;
      } else {
        tally.perSecond.count("read errors", answeredAt);
        tally.readErrors++;
      }
      outstanding--;
      finishIfIdle();
    });
  }

  /** An answer of a {@code type} ("create", "pay", "read") now: its latency from {@code dueAt}; returns now. */
  private static long recordAnswer(String type, Tally tally, Histogram micros, long dueAt) {
    long answeredAt = System.nanoTime();
    micros.recordValue(Math.min(HIGHEST_MICROS, (answeredAt - dueAt) / 1000));
    tally.perSecond.count(type + " answered", answeredAt);
    tally.perSecond.latency(type, dueAt, (answeredAt - dueAt) / 1000);
    return answeredAt;
  }

  private record Answer(int status, Buffer body) {}

  /**
   * A create or pay ({@code type}) through Vert.x's client (the reads go through {@link StatusReads}), counted in
   * {@code tally} as sent when written; a create's delay before it was written is recorded too.
   */
  private Future<Answer> send(RequestOptions options, Buffer body, long dueAt, String type, Tally tally) {
    return client.request(options).compose(request -> {
      long now = System.nanoTime();
      tally.perSecond.count(type + " sent", now);
      if ("create".equals(type)) {
        tally.sendDelayMicros.recordValue(Math.min(HIGHEST_MICROS, (now - dueAt) / 1000));
        if (now - dueAt > LATE_NANOS) {
          tally.lateSends++;
        }
      }
      return (body == null ? request.send() : request.send(body))
          .compose(response -> response.body().map(content -> new Answer(response.statusCode(), content)));
    });
  }

  /**
   * The index of a node in {@code settings.ports()}. One node: no draw, so that a one-node run's orders come out as they
   * did before there could be several.
   */
  private int anyNode() {
    int nodes = settings.ports().size();
    return nodes == 1 ? 0 : random.nextInt(nodes);
  }

  private static String kind(io.vertx.core.AsyncResult<Answer> outcome) {
    return outcome.succeeded() ? "HTTP " + outcome.result().status : outcome.cause().getClass().getSimpleName();
  }

  private void finishIfIdle() {
    if (schedulingDone && outstanding == 0 && !finished.future().isComplete()) {
      statusReads.close();
      finished.complete();
    }
  }
}
