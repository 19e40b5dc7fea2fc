package ordertimeout.order;

/**
 * One create: the order with its id and deadline decided, the key that makes it idempotent, and the
 * {@link System#nanoTime()} by which it must be decided (past it, it is refused and never committed).
 */
public record CreateRequest(NewOrder order, IdempotencyKey idempotency, long decideByNanos) {
  public boolean pastDeadline() {
    return System.nanoTime() - decideByNanos > 0;
  }
}
