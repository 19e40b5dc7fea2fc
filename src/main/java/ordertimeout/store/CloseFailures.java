package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.order.OrderRejected;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Failed timeout closes, counted per order in PostgreSQL (so the count survives restarts and adds up across nodes),
 * and the orders parked once their count reached {@code close.parkAfterFailures}: the close statement skips a parked
 * order, the sweep does not page it, and it stays unpaid, listed and counted until an admin retries it (or closes
 * it). A close of the order, however it comes, deletes its count.
 */
public final class CloseFailures {
  private final Pool pool;

  public CloseFailures(Pool pool) {
    this.pool = pool;
  }

  /** The order's count after this failure, and whether this failure parked it. */
  public record Counted(int failures, boolean parkedNow) {
    public static final Counted NOTHING = new Counted(0, false);
  }

  /**
   * One more failed close of {@code orderId}; parks it when the count reaches {@code parkAfter}. {@link Counted#NOTHING}
   * when the order is no longer unpaid, or parked already.
   */
  public Future<Counted> record(long orderId, String error, int parkAfter) {
    String trimmed = error.length() > 1000 ? error.substring(0, 1000) : error;
    return pool.preparedQuery(Sql.RECORD_CLOSE_FAILURE).execute(Tuple.of(orderId, trimmed, parkAfter)).map(rows -> {
      if (rows.size() == 0) {
        return Counted.NOTHING;
      }
      Row row = rows.iterator().next();
      // a parked order's row is not updated (no row back), so parked here means this failure parked it
      return new Counted(row.getInteger("failures"), row.getBoolean("parked"));
    });
  }

  /** A parked unpaid order: who it is, its deadline and its failed closes. */
  public record Parked(long orderId, String client, String userId, Instant closeAt, int failures, Instant firstFailedAt,
                       Instant lastFailedAt, String lastError, Instant parkedAt) {}

  /** Parked unpaid orders with an id above {@code afterId}, by id, {@code limit} at most. */
  public Future<KeysetPage<Parked>> parked(long afterId, int limit) {
    return pool.preparedQuery(Sql.PARKED_PAGE).execute(Tuple.of(afterId, limit + 1)).map(rows -> {
      List<Parked> page = new ArrayList<>();
      for (Row row : rows) {
        page.add(new Parked(row.getLong("order_id"), row.getString("client"), row.getString("user_id"),
            instant(row, "close_at"), row.getInteger("failures"), instant(row, "first_failed_at"), instant(row, "last_failed_at"),
            row.getString("last_error"), instant(row, "parked_at")));
      }
      return KeysetPage.of(page, limit, Parked::orderId);
    });
  }

  public Future<Long> countParked() {
    return pool.query(Sql.COUNT_PARKED).execute().map(rows -> rows.iterator().next().getLong(0));
  }

  /**
   * Unparks {@code orderId} (its count starts again from zero), committed at once. {@link Reason#ORDER_NOT_FOUND} when
   * there is no such order, {@link Reason#ORDER_NOT_PARKED} when it is not parked (never failed, closed or paid since, or
   * unparked by another retry).
   */
  public Future<Void> unpark(long orderId) {
    return pool.preparedQuery(Sql.UNPARK).execute(Tuple.of(orderId)).map(rows -> {
      if (rows.size() == 0) {
        throw new OrderRejected(Reason.ORDER_NOT_FOUND, "no order " + orderId);
      }
      Row row = rows.iterator().next();
      if (!row.getBoolean("unparked")) {
        throw new OrderRejected(Reason.ORDER_NOT_PARKED, "order " + orderId + " is not parked (it is "
            + row.getString("status") + "); only a parked order can be retried");
      }
      return null;
    });
  }

  private static Instant instant(Row row, String column) {
    return row.getOffsetDateTime(column).toInstant();
  }
}
