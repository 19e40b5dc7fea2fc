package ordertimeout.order;

/**
 * A pay request: the order, the client asking (null for an admin, who may pay any order), and the
 * {@link System#nanoTime()} after which a pay that ran out of its lock wait is not tried again.
 */
public record PayRequest(long id, String client, long retryUntilNanos) {
  public boolean pastRetries() {
    return System.nanoTime() - retryUntilNanos > 0;
  }
}
