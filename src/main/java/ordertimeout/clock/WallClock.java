package ordertimeout.clock;

/**
 * This node's wall clock: the system clock shifted by {@code node.clockOffsetMillis}, which exists for fault
 * injection only (a node whose clock runs ahead or behind). Every reading of the wall clock in the service goes
 * through it; the database keeps its own clock, as a separate machine would.
 */
public final class WallClock {
  public static final WallClock SYSTEM = new WallClock(0);

  private final long offsetMillis;

  public WallClock(long offsetMillis) {
    this.offsetMillis = offsetMillis;
  }

  public long millis() {
    return System.currentTimeMillis() + offsetMillis;
  }
}
