package ordertimeout.bus;

/** Orders whose deadline (or reminder) is due, and which path found them. */
public record DueOrders(long[] orderIds, Path path) {
  public enum Path { WHEEL, SWEEP }
}
