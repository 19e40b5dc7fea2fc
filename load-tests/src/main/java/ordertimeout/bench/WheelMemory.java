package ordertimeout.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.timer.TimeWheel;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Bytes per pending timer of a {@link TimeWheel} holding N timers (built as the service builds it: initial capacity
 * 2^16, grown while scheduling), measured two ways: {@code heapBytes() / pending()}, and the heap retained by the wheel
 * (used heap after a full GC with the wheel, minus before it). Runs in a JVM of its own, with the serial collector
 * so that used heap after {@code System.gc()} is exactly the live data (no partly filled regions).
 */
public final class WheelMemory {
  private static final String JVM_OPTIONS = "-Xms4g -Xmx4g -XX:+UseSerialGC";
  private static final int TRIES = 5;

  private WheelMemory() {}

  /** Arguments: pending timers. Prints one JSON line. */
  public static void main(String[] args) {
    int pending = Integer.parseInt(args[0]);
    List<Try> tries = new ArrayList<>();
    for (int attempt = 0; attempt < TRIES; attempt++) {
      tries.add(measureOnce(pending));
    }
    long[] retained = tries.stream().mapToLong(Try::retainedBytes).sorted().toArray();
    long median = retained[retained.length / 2];
    Try last = tries.get(tries.size() - 1);
    JsonObject result = new JsonObject()
        .put("pending", last.pending())
        .put("tries", TRIES)
        .put("heapBytes", last.heapBytes())
        .put("heapBytesPerPendingTimer", Results.round((double) last.heapBytes() / last.pending()))
        .put("retainedBytes", new JsonArray(Arrays.stream(retained).boxed().toList()))
        .put("retainedBytesPerPendingTimerMedian", Results.round((double) median / last.pending()))
        .put("how", "new TimeWheel(10 ms, now, 1 << 16) then schedule(id, due, CLOSE) of " + pending
            + " time-ordered ids due uniformly over the next 7 days. heapBytes()/pending(): the wheel's own sum of its "
            + "array lengths. Retained: MemoryMXBean heap used after System.gc() with the wheel alive minus before it "
            + "was built, median of " + TRIES + " tries, in a JVM of its own (" + JVM_OPTIONS + "); both include the "
            + "slack of the last growth (capacity vs pending)");
    System.out.println(result.encode());
  }

  private record Try(long retainedBytes, long heapBytes, int pending) {}

  /** In a method of its own so that no earlier wheel is still referenced from a stack slot when "before" is read. */
  private static Try measureOnce(int pending) {
    long before = usedHeapAfterGc();
    TimeWheel wheel = filled(pending);
    long after = usedHeapAfterGc();
    Try result = new Try(after - before, wheel.heapBytes(), wheel.pending());
    Reference.reachabilityFence(wheel);
    return result;
  }

  private static TimeWheel filled(int pending) {
    long now = System.currentTimeMillis();
    SplittableRandom random = new SplittableRandom(7);
    TimeWheel wheel = new TimeWheel(WheelBenchmark.TICK_MILLIS, now, 1 << 16);
    for (int i = 0; i < pending; i++) {
      wheel.schedule(WheelBenchmark.orderId(i), now + 1 + random.nextLong(7L * 24 * 3600 * 1000), TimeWheel.CLOSE);
    }
    return wheel;
  }

  private static long usedHeapAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  /** Runs {@link #main} in a new JVM on the given class path and returns its result. */
  static JsonObject measureInOwnJvm(String classPath, int pending) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(ProcessHandle.current().info().command().orElse("java"));
    command.addAll(List.of(JVM_OPTIONS.split(" ")));
    command.addAll(List.of("-cp", classPath, WheelMemory.class.getName(), Integer.toString(pending)));
    Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    if (process.waitFor() != 0) {
      throw new IllegalStateException("the memory measurement failed: " + output);
    }
    return new JsonObject(output.substring(output.lastIndexOf('\n') + 1));
  }
}
