package ordertimeout.support;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Polls a condition every 20 ms until it holds, failing the test with what it waited for after {@code timeout}. */
public final class Await {
  private Await() {}

  public static void until(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + timeout + " waiting for: " + what);
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}
