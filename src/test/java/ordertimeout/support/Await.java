package ordertimeout.support;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waiting in tests: for a condition (polled every 20 ms, failing with what it waited for) or for a while. */
public final class Await {
  private Await() {}

  public static void until(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + timeout + " waiting for: " + what);
      }
      sleep(20);
    }
  }

  /** Thread.sleep for a test: an interrupt fails it instead of being a checked exception to declare. */
  public static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
