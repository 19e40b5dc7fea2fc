package ordertimeout.bench;

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.timer.TimeWheel;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.format.OutputFormatFactory;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.VerboseMode;

import java.io.File;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The service's {@link TimeWheel} against Netty's {@link HashedWheelTimer} and a {@link DelayQueue}, in the same
 * run (JMH, one fork per benchmark, single-shot invocations of N timers each), on:
 * <ul>
 *   <li>expire: schedule N timers due within 20 ms, then run until all N have fired (op = one timer scheduled and
 *       fired). The same due times for all three; the HashedWheelTimer on the wall clock, the others on a virtual one.</li>
 *   <li>expire over 30 min: the same with due times spread over 30 minutes of virtual time, which makes the wheel
 *       cascade; wheel and DelayQueue only (a HashedWheelTimer would need 30 minutes of wall clock per invocation).</li>
 *   <li>cancel: schedule N timers due in 1-31 minutes, then cancel all N in a random order (op = one timer scheduled
 *       and cancelled). The others cancel through the handle they returned (their best case); in "cancel by id" they
 *       find it in a {@code HashMap<Long, handle>} first, as the service would have to (it cancels by order id).</li>
 * </ul>
 * Each structure lives for the whole trial, as in the service, so its state after earlier invocations (a wheel's
 * free cells spread over its slab and its tombstones, a queue's grown array) is part of what is measured. See {@link #HOW_EXPIRE} and
 * {@link #HOW_CANCEL} for the details, which go into the JSON too. Then the wheel's memory with 10 million pending
 * timers, in a JVM of its own ({@link WheelMemory}).
 *
 * <p>Arguments: timers per invocation (1000000), pending timers for the memory measurement (10000000).
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class WheelBenchmark {
  static final long TICK_MILLIS = 10;
  /** Near due times: within this many ms of being scheduled, so that a wall-clock timer can expire them quickly. */
  static final int NEAR_MILLIS = 20;
  /** Spread due times: over 30 minutes (the physical category). */
  static final long SPREAD_MILLIS = 30 * 60 * 1000;
  /** Timers to cancel are due at least this far ahead, so that none fires before its cancel on the wall clock. */
  static final long CANCEL_LEAD_MILLIS = 60_000;
  private static final int BATCH = 1000;
  /** Enough for each structure to reach its steady state (the wheel's free cells spread over its slab). */
  private static final int WARMUP_SHOTS = 8;
  private static final int MEASURED_SHOTS = 5;

  static final String HOW_EXPIRE = "schedule N timers due 0-20 ms ahead, then run until all N have fired; ops/s = N / median "
      + "time of an invocation. Wheel and DelayQueue on a virtual clock advanced in 10 ms steps after the schedules "
      + "(wheel: advance() with batches of 1000; DelayQueue: poll() until null at each step). HashedWheelTimer (10 ms tick, "
      + "512 buckets) on the wall clock: from the first newTimeout until its worker thread has run the N-th task, so it "
      + "includes the hand-off to the worker (at most 100,000 timeouts per tick: a cap of 10 M/s at a 10 ms tick) and "
      + "up to ~30 ms of waiting for the last deadlines, while its worker uses the second core";
  static final String HOW_EXPIRE_SPREAD = "as expire, with due times uniform over 30 minutes of virtual time (the wheel "
      + "cascades through 3 levels); wheel and DelayQueue only";
  static final String HOW_CANCEL = "schedule N timers due 1-31 min ahead, then cancel all N in a random order; ops/s = N / "
      + "median time of an invocation, as seen by the caller. Wheel: cancel(orderId) through its id index; its "
      + "tombstones are reclaimed by a later schedule (purge), which is measured in the next invocation. "
      + "HashedWheelTimer: Timeout.cancel() on the handle kept in an array (no id lookup); its worker unlinks them on "
      + "its next tick, waited for after the measurement. DelayQueue: remove(Object) is a linear scan (~N^2/2 steps, "
      + "hours at this N), so the lazy-cancel idiom (a flag on the element, skipped when it reaches the head), its best "
      + "case; the cancelled elements are cleared after the measurement";
  static final String HOW_CANCEL_BY_ID = "as cancel, but HashedWheelTimer and DelayQueue keep their handles in a "
      + "HashMap<Long, handle> by order id (put at schedule, remove at cancel), as the service would need since it cancels "
      + "by order id; the wheel's figure is the same benchmark as in cancel (it always cancels by id)";

  /** The inputs, the same for every structure: time-ordered order ids, due offsets, a cancel order. */
  @State(Scope.Benchmark)
  public static class Timers {
    @Param("1000000")
    public int timers;

    long[] ids;
    long[] nearMillis;
    long[] spreadMillis;
    long[] cancelMillis;
    int[] cancelOrder;

    @Setup(Level.Trial)
    public void generate() {
      SplittableRandom random = new SplittableRandom(42);
      ids = new long[timers];
      nearMillis = new long[timers];
      spreadMillis = new long[timers];
      cancelMillis = new long[timers];
      cancelOrder = new int[timers];
      for (int i = 0; i < timers; i++) {
        ids[i] = orderId(i);
        nearMillis[i] = random.nextInt(NEAR_MILLIS);
        spreadMillis[i] = 1 + random.nextLong(SPREAD_MILLIS);
        cancelMillis[i] = CANCEL_LEAD_MILLIS + spreadMillis[i];
        cancelOrder[i] = i;
      }
      for (int i = timers - 1; i > 0; i--) {
        int j = random.nextInt(i + 1);
        int swap = cancelOrder[i];
        cancelOrder[i] = cancelOrder[j];
        cancelOrder[j] = swap;
      }
    }
  }

  /** An id laid out like {@code OrderIds}: 50 orders a millisecond from node 1. */
  static long orderId(int i) {
    return ((long) (i / 50) << 22) | (1L << 12) | (i % 50);
  }

  // ---- TimeWheel on a virtual clock

  @State(Scope.Benchmark)
  public static class Wheel {
    TimeWheel wheel;
    long now;

    @Setup(Level.Trial)
    public void create(Timers t) {
      wheel = new TimeWheel(TICK_MILLIS, 0, t.timers); // sized as the service's wheel is once it has grown
    }
  }

  @Benchmark
  public long wheelExpire(Timers t, Wheel w) {
    return wheelScheduleAndExpire(t, w, t.nearMillis, NEAR_MILLIS);
  }

  @Benchmark
  public long wheelExpireSpread(Timers t, Wheel w) {
    return wheelScheduleAndExpire(t, w, t.spreadMillis, SPREAD_MILLIS);
  }

  private static long wheelScheduleAndExpire(Timers t, Wheel w, long[] dueOffsets, long span) {
    TimeWheel wheel = w.wheel;
    long start = w.now;
    for (int i = 0; i < t.timers; i++) {
      wheel.schedule(t.ids[i], start + dueOffsets[i], TimeWheel.CLOSE);
    }
    long[] checksum = new long[1];
    TimeWheel.DueSink sink = (kind, ids, count) -> checksum[0] += ids[count - 1];
    int fired = 0;
    for (long now = start; now <= start + span + TICK_MILLIS; now += TICK_MILLIS) {
      fired += wheel.advance(now, BATCH, sink);
      w.now = now;
    }
    expect("wheel expire", fired, t.timers);
    return checksum[0];
  }

  @Benchmark
  public int wheelCancel(Timers t, Wheel w) {
    TimeWheel wheel = w.wheel;
    for (int i = 0; i < t.timers; i++) {
      wheel.schedule(t.ids[i], w.now + t.cancelMillis[i], TimeWheel.CLOSE);
    }
    int cancelled = 0;
    for (int i : t.cancelOrder) {
      cancelled += wheel.cancel(t.ids[i]);
    }
    expect("wheel cancel", cancelled, t.timers);
    expect("wheel pending after cancel", wheel.pending(), 0);
    return cancelled;
  }

  // ---- DelayQueue on a virtual clock

  static final class DelayedOrder implements Delayed {
    /** The virtual clock of the DelayQueue benchmarks (one thread uses it). */
    static long now;

    final long id;
    final long dueMillis;
    boolean cancelled;

    DelayedOrder(long id, long dueMillis) {
      this.id = id;
      this.dueMillis = dueMillis;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(dueMillis - now, TimeUnit.MILLISECONDS);
    }

    @Override
    public int compareTo(Delayed other) {
      return Long.compare(dueMillis, ((DelayedOrder) other).dueMillis);
    }
  }

  @State(Scope.Benchmark)
  public static class Queue {
    final DelayQueue<DelayedOrder> queue = new DelayQueue<>();
    final Map<Long, DelayedOrder> byId = new HashMap<>();
    DelayedOrder[] handles;

    @Setup(Level.Trial)
    public void create(Timers t) {
      handles = new DelayedOrder[t.timers];
    }

    /** Drops the lazily cancelled elements, which would otherwise pile up: the clock never reaches them. */
    @TearDown(Level.Invocation)
    public void clear() {
      queue.clear();
    }
  }

  @Benchmark
  public long delayQueueExpire(Timers t, Queue q) {
    return queueScheduleAndExpire(t, q, t.nearMillis, NEAR_MILLIS);
  }

  @Benchmark
  public long delayQueueExpireSpread(Timers t, Queue q) {
    return queueScheduleAndExpire(t, q, t.spreadMillis, SPREAD_MILLIS);
  }

  private static long queueScheduleAndExpire(Timers t, Queue q, long[] dueOffsets, long span) {
    DelayQueue<DelayedOrder> queue = q.queue;
    long start = DelayedOrder.now;
    for (int i = 0; i < t.timers; i++) {
      queue.offer(new DelayedOrder(t.ids[i], start + dueOffsets[i]));
    }
    long checksum = 0;
    int fired = 0;
    for (long now = start; now <= start + span + TICK_MILLIS; now += TICK_MILLIS) {
      DelayedOrder.now = now;
      for (DelayedOrder due; (due = queue.poll()) != null; ) {
        checksum += due.id;
        fired++;
      }
    }
    expect("DelayQueue expire", fired, t.timers);
    return checksum;
  }

  @Benchmark
  public int delayQueueCancel(Timers t, Queue q) {
    DelayQueue<DelayedOrder> queue = q.queue;
    DelayedOrder[] handles = q.handles;
    for (int i = 0; i < t.timers; i++) {
      queue.offer(handles[i] = new DelayedOrder(t.ids[i], DelayedOrder.now + t.cancelMillis[i]));
    }
    int cancelled = 0;
    for (int i : t.cancelOrder) {
      handles[i].cancelled = true;
      cancelled++;
    }
    return cancelled;
  }

  @Benchmark
  public int delayQueueCancelById(Timers t, Queue q) {
    DelayQueue<DelayedOrder> queue = q.queue;
    Map<Long, DelayedOrder> byId = q.byId;
    for (int i = 0; i < t.timers; i++) {
      DelayedOrder order = new DelayedOrder(t.ids[i], DelayedOrder.now + t.cancelMillis[i]);
      queue.offer(order);
      byId.put(order.id, order);
    }
    int cancelled = 0;
    for (int i : t.cancelOrder) {
      byId.remove(t.ids[i]).cancelled = true;
      cancelled++;
    }
    return cancelled;
  }

  // ---- Netty HashedWheelTimer on the wall clock

  @State(Scope.Benchmark)
  public static class Netty {
    HashedWheelTimer timer;
    final CountingTask task = new CountingTask();
    final Map<Long, Timeout> byId = new HashMap<>();
    Timeout[] handles;

    @Setup(Level.Trial)
    public void start(Timers t) {
      timer = new HashedWheelTimer(Executors.defaultThreadFactory(), TICK_MILLIS, TimeUnit.MILLISECONDS, 512, false);
      timer.start();
      handles = new Timeout[t.timers];
    }

    /** Lets the worker unlink what the last invocation cancelled, so that the next one starts from an empty timer. */
    @TearDown(Level.Invocation)
    public void settle() {
      while (timer.pendingTimeouts() > 0) {
        LockSupport.parkNanos(100_000);
      }
    }

    @TearDown(Level.Trial)
    public void stop() {
      timer.stop();
    }
  }

  /** Counts its runs; only the timer's worker thread runs it. */
  static final class CountingTask implements TimerTask {
    volatile long runs;

    @Override
    @SuppressWarnings("NonAtomicOperationOnVolatileField") // one writer
    public void run(Timeout timeout) {
      runs++;
    }
  }

  @Benchmark
  public long hashedWheelTimerExpire(Timers t, Netty netty) {
    CountingTask task = netty.task;
    long target = task.runs + t.timers;
    for (int i = 0; i < t.timers; i++) {
      netty.timer.newTimeout(task, t.nearMillis[i], TimeUnit.MILLISECONDS);
    }
    while (task.runs < target) {
      LockSupport.parkNanos(100_000); // not a spin: the worker needs the other core
    }
    return task.runs;
  }

  @Benchmark
  public int hashedWheelTimerCancel(Timers t, Netty netty) {
    Timeout[] handles = netty.handles;
    for (int i = 0; i < t.timers; i++) {
      handles[i] = netty.timer.newTimeout(netty.task, t.cancelMillis[i], TimeUnit.MILLISECONDS);
    }
    int cancelled = 0;
    for (int i : t.cancelOrder) {
      if (handles[i].cancel()) {
        cancelled++;
      }
    }
    expect("HashedWheelTimer cancel", cancelled, t.timers);
    return cancelled;
  }

  @Benchmark
  public int hashedWheelTimerCancelById(Timers t, Netty netty) {
    Map<Long, Timeout> byId = netty.byId;
    for (int i = 0; i < t.timers; i++) {
      byId.put(t.ids[i], netty.timer.newTimeout(netty.task, t.cancelMillis[i], TimeUnit.MILLISECONDS));
    }
    int cancelled = 0;
    for (int i : t.cancelOrder) {
      if (byId.remove(t.ids[i]).cancel()) {
        cancelled++;
      }
    }
    expect("HashedWheelTimer cancel by id", cancelled, t.timers);
    return cancelled;
  }

  private static void expect(String what, long actual, long expected) {
    if (actual != expected) {
      throw new IllegalStateException(what + ": " + actual + " instead of " + expected);
    }
  }

  // ---- the run

  private static final List<String> CONTENDERS = List.of("wheel", "hashedWheelTimer", "delayQueue");
  private static final Map<String, String> NAMES = Map.of(
      "wheel", "TimeWheel", "hashedWheelTimer", "HashedWheelTimer", "delayQueue", "DelayQueue");

  public static void main(String[] args) throws Exception {
    int timers = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int pendingForMemory = args.length > 1 ? Integer.parseInt(args[1]) : 10_000_000;
    String classPath = exposeClassPath();

    Options options = new OptionsBuilder()
        .include(WheelBenchmark.class.getName() + "\\.")
        .param("timers", Integer.toString(timers))
        .forks(1)
        .warmupIterations(WARMUP_SHOTS)
        .measurementIterations(MEASURED_SHOTS)
        .shouldDoGC(true)
        .jvmArgs("-Xms4g", "-Xmx4g")
        .build();
    // JMH's progress goes to stderr, so that stdout carries only the summary line.
    Collection<RunResult> results = new Runner(options, OutputFormatFactory.createFormatInstance(System.err, VerboseMode.NORMAL)).run();

    JsonObject expire = workload(results, timers, HOW_EXPIRE,
        "wheel", "wheelExpire", "hashedWheelTimer", "hashedWheelTimerExpire", "delayQueue", "delayQueueExpire");
    JsonObject spread = workload(results, timers, HOW_EXPIRE_SPREAD,
        "wheel", "wheelExpireSpread", "delayQueue", "delayQueueExpireSpread");
    JsonObject cancel = workload(results, timers, HOW_CANCEL,
        "wheel", "wheelCancel", "hashedWheelTimer", "hashedWheelTimerCancel", "delayQueue", "delayQueueCancel");
    JsonObject cancelById = workload(results, timers, HOW_CANCEL_BY_ID,
        "wheel", "wheelCancel", "hashedWheelTimer", "hashedWheelTimerCancelById", "delayQueue", "delayQueueCancelById");
    JsonObject memory = WheelMemory.measureInOwnJvm(classPath, pendingForMemory);

    double perTimerHeap = memory.getDouble("heapBytesPerPendingTimer");
    double perTimerRetained = memory.getDouble("retainedBytesPerPendingTimerMedian");
    boolean speedMet = expire.getDouble("wheelVsFasterOther") >= 3 && cancel.getDouble("wheelVsFasterOther") >= 3;
    boolean memoryMet = Math.max(perTimerHeap, perTimerRetained) <= 32;
    JsonObject result = Results.header("wheel")
        .put("jmh", "single-shot invocations on structures kept for the whole trial, " + WARMUP_SHOTS + " warmup + "
            + MEASURED_SHOTS + " measured per benchmark (warm-up also brings each structure to its steady state: the "
            + "wheel's free cells spread over its slab, a queue's grown array), 1 fork each (-Xms4g -Xmx4g), GC between invocations; figures are medians")
        .put("timersPerInvocation", timers)
        .put("expire", expire)
        .put("expireSpread", spread)
        .put("cancel", cancel)
        .put("cancelById", cancelById)
        .put("memory", memory)
        .put("targets", new JsonObject()
            .put("wheelAtLeast3xFasterOther", speedMet)
            .put("atMost32BytesPerPendingTimerAt10M", memoryMet));
    Results.write("wheel", result);

    System.out.printf("wheel: %,d timers per invocation, medians of %d; expire within 20 ms: %s; over 30 min: %s; cancel: %s; "
            + "cancel by id: %s; %,d pending: %.1f B/timer by heapBytes()/pending(), %.1f B/timer retained after full GC "
            + "(median of %d, own JVM); targets >=3x (expire, cancel) %s, <=32 B %s%n",
        timers, MEASURED_SHOTS, line(expire), line(spread), line(cancel), line(cancelById), memory.getLong("pending"),
        perTimerHeap, perTimerRetained, memory.getInteger("tries"), speedMet ? "met" : "MISSED", memoryMet ? "met" : "MISSED");
    System.exit(0);
  }

  private static String line(JsonObject workload) {
    StringBuilder line = new StringBuilder();
    for (String contender : CONTENDERS) {
      if (workload.containsKey(contender)) {
        line.append(String.format("%s %.2f M/s, ", NAMES.get(contender), workload.getJsonObject(contender).getDouble("opsPerSecond") / 1e6));
      }
    }
    return line.append(String.format("wheel %.2fx the faster other", workload.getDouble("wheelVsFasterOther"))).toString();
  }

  /** ops/s of each contender on one workload, from the median time of its measured invocations. */
  private static JsonObject workload(Collection<RunResult> results, int timers, String how, String... contenderAndMethod) {
    JsonObject out = new JsonObject().put("measures", how);
    double fasterOther = 0;
    for (int i = 0; i < contenderAndMethod.length; i += 2) {
      String contender = contenderAndMethod[i];
      String method = contenderAndMethod[i + 1];
      RunResult run = results.stream()
          .filter(r -> r.getParams().getBenchmark().endsWith("." + method))
          .findFirst()
          .orElseThrow(() -> new IllegalStateException("no result for " + method));
      var statistics = run.getPrimaryResult().getStatistics();
      double medianMillis = statistics.getPercentile(50);
      JsonArray shots = new JsonArray();
      for (var it = statistics.getRawData(); it.hasNext(); ) {
        shots.add(Results.round(it.next().getKey()));
      }
      long opsPerSecond = Math.round(timers / (medianMillis / 1000));
      out.put(contender, new JsonObject()
          .put("name", NAMES.get(contender))
          .put("benchmark", method)
          .put("medianMillisPerInvocation", Results.round(medianMillis))
          .put("millisPerInvocation", shots)
          .put("opsPerSecond", opsPerSecond));
      if (!contender.equals("wheel")) {
        fasterOther = Math.max(fasterOther, opsPerSecond);
      }
    }
    return out.put("wheelVsFasterOther", Results.round(out.getJsonObject("wheel").getDouble("opsPerSecond") / fasterOther));
  }

  /**
   * exec:java runs this in Maven's JVM, whose java.class.path is Maven's own launcher; JMH builds its forks' class
   * path from that property, so it is set to the project's test class path (the URLs of exec's class loader).
   */
  public static String exposeClassPath() throws URISyntaxException {
    List<String> entries = new ArrayList<>();
    for (ClassLoader loader = Thread.currentThread().getContextClassLoader(); loader != null; loader = loader.getParent()) {
      if (loader instanceof URLClassLoader urls) {
        for (URL url : urls.getURLs()) {
          entries.add(Path.of(url.toURI()).toString());
        }
      }
    }
    String classPath = entries.isEmpty() ? System.getProperty("java.class.path") : String.join(File.pathSeparator, entries);
    System.setProperty("java.class.path", classPath);
    return classPath;
  }

}
