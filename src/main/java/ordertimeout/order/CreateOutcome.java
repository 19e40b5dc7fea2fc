package ordertimeout.order;

/** A create that was taken: the new order, or ({@code replay}) the order as the first request with its key created it. */
public record CreateOutcome(Order order, boolean replay) {}
