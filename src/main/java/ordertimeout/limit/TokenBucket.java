package ordertimeout.limit;

/** A token bucket refilled continuously at {@code ratePerSecond} up to {@code burst}; single-threaded. */
public final class TokenBucket {
  private final double ratePerNano;
  private final double capacity;
  private double tokens;
  private long refilledAt;

  public TokenBucket(double ratePerSecond, double burst, long nowNanos) {
    if (ratePerSecond <= 0 || burst < 1) {
      throw new IllegalArgumentException("rate must be > 0 and burst >= 1");
    }
    this.ratePerNano = ratePerSecond / 1e9;
    this.capacity = burst;
    this.tokens = burst;
    this.refilledAt = nowNanos;
  }

  /** Takes up to {@code wanted} whole tokens and returns how many it took. */
  public int take(int wanted, long nowNanos) {
    refill(nowNanos);
    int granted = (int) Math.min(wanted, Math.floor(tokens));
    tokens -= granted;
    return granted;
  }

  /** Puts back {@code permits} taken but not used, up to the burst. */
  public void giveBack(int permits, long nowNanos) {
    refill(nowNanos);
    tokens = Math.min(capacity, tokens + permits);
  }

  /** Nanoseconds until {@code wanted} tokens (at most the burst) are there; 0 if they are now. */
  public long nanosUntil(int wanted, long nowNanos) {
    refill(nowNanos);
    double target = Math.min(wanted, capacity);
    return tokens >= target ? 0 : (long) Math.ceil((target - tokens) / ratePerNano);
  }

  private void refill(long nowNanos) {
    long elapsed = nowNanos - refilledAt;
    if (elapsed > 0) {
      tokens = Math.min(capacity, tokens + elapsed * ratePerNano);
      refilledAt = nowNanos;
    }
  }
}
