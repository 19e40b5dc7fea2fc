package ordertimeout.order;

/** A create's or a stock adjust's Idempotency-Key, scoped per API client; {@code requestHash} tells a replay from a reuse of the key. */
public record IdempotencyKey(String client, String key, String requestHash) {}
