package ordertimeout.order;

/** The order after a pay or close request, and whether this request changed it. */
public record StateChange(Order order, boolean changed) {}
