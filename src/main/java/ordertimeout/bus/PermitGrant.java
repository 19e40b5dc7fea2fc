package ordertimeout.bus;

/** How many permits were granted (maybe fewer than asked), and when to ask again for the rest. */
public record PermitGrant(int granted, long retryAfterMillis) {}
