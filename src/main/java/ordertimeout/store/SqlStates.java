package ordertimeout.store;

import io.vertx.pgclient.PgException;

/** The SQLSTATEs the service answers in their own way. */
public final class SqlStates {
  /** A lock wait ran past the session's {@code lock_timeout}; the statement and its transaction failed. */
  public static final String LOCK_NOT_AVAILABLE = "55P03";

  /**
   * A statement cancelled: past the session's {@code statement_timeout}, or by {@code pg_cancel_backend} (a drain that
   * ran out of time cancels its node's statements so); the transaction failed.
   */
  public static final String QUERY_CANCELED = "57014";

  /** A row matched no partition (a check_violation whose message says so): its order id's partition is not made yet. */
  public static final String CHECK_VIOLATION = "23514";

  private SqlStates() {}

  /** An insert into orders or order_items found no partition for its id (the partitions job is behind). */
  public static boolean isNoPartition(Throwable failure) {
    return failure instanceof PgException pg && CHECK_VIOLATION.equals(pg.getSqlState()) && pg.getErrorMessage() != null
        && pg.getErrorMessage().startsWith("no partition of relation");
  }

  public static boolean is(Throwable failure, String sqlState) {
    return failure instanceof PgException pg && sqlState.equals(pg.getSqlState());
  }
}
