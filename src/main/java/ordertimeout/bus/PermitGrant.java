package ordertimeout.bus;

/**
 * How many permits were granted (maybe fewer than asked), and when to ask again for the rest.
 * {@code limiterUnavailable}: none were granted because the bucket's store (Redis) could not be reached, not because
 * the bucket is empty.
 */
public record PermitGrant(int granted, long retryAfterMillis, boolean limiterUnavailable) {

  public PermitGrant(int granted, long retryAfterMillis) {
    this(granted, retryAfterMillis, false);
  }

  public static PermitGrant limiterUnavailable(long retryAfterMillis) {
    return new PermitGrant(0, retryAfterMillis, true);
  }
}
