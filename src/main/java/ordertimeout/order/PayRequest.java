package ordertimeout.order;

/** A pay request: the order, and the client asking (null for an admin, who may pay any order). */
public record PayRequest(long id, String client) {}
