package ordertimeout.bus;

public record CancelTimers(long[] orderIds) {
  public static CancelTimers one(long orderId) {
    return new CancelTimers(new long[] {orderId});
  }
}
