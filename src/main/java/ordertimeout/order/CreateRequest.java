package ordertimeout.order;

/** One create: the order with its id and deadline decided, and the key that makes it idempotent. */
public record CreateRequest(NewOrder order, IdempotencyKey idempotency) {}
