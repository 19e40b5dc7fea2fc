package ordertimeout.bus;

/** Asks the limiter for permits from one named bucket. */
public record PermitRequest(String bucket, int permits) {}
