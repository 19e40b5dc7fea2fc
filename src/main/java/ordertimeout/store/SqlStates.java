package ordertimeout.store;

import io.vertx.pgclient.PgException;

/** The SQLSTATEs the service answers in their own way. */
public final class SqlStates {
  /** A lock wait ran past the session's {@code lock_timeout}; the statement and its transaction failed. */
  public static final String LOCK_NOT_AVAILABLE = "55P03";

  private SqlStates() {}

  public static boolean is(Throwable failure, String sqlState) {
    return failure instanceof PgException pg && sqlState.equals(pg.getSqlState());
  }
}
