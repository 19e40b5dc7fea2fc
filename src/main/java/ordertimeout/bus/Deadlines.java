package ordertimeout.bus;

/**
 * Deadlines and reminders of orders as epoch milliseconds ({@link #NONE} where a timer is not wanted),
 * in parallel arrays: what the timer puts into its wheel, from a create or a reload page.
 */
public record Deadlines(long[] orderIds, long[] closeAtMillis, long[] remindAtMillis) {
  public static final long NONE = -1;
  public static final Deadlines EMPTY = new Deadlines(new long[0], new long[0], new long[0]);

  public static Deadlines one(long orderId, long closeAtMillis, long remindAtMillis) {
    return new Deadlines(new long[] {orderId}, new long[] {closeAtMillis}, new long[] {remindAtMillis});
  }

  public int size() {
    return orderIds.length;
  }
}
