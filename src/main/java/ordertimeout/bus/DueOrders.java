package ordertimeout.bus;

/** Orders whose deadline (or reminder) is due, and which path found them: the wheel, the sweep, or an admin's retry of a parked order. */
public record DueOrders(long[] orderIds, Path path) {
  public enum Path { WHEEL, SWEEP, RETRY }
}
