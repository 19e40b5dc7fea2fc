package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.bus.Deadlines;

/**
 * Bulk-extend's per-order action, in the caller's transaction: moves the deadline of each UNPAID order not due yet
 * (past neither its deadline nor the hold of a started payment, as the single extend decides it) to {@code
 * extendSeconds} past the time it would close now (the later of the two; the hold ends), within an admin's ceiling
 * (compare-and-set in SQL, with its ORDER_DEADLINE_EXTENDED outbox row) and answers the due times of the orders it
 * moved (their new deadlines), for the timer (moved with {@code timer.move}, as the single extend moves it). The
 * single-order extend (POST /v1/orders/{id}/extend) moves one order to the time its caller chose, within the caller's
 * ceiling; an admin's bulk extend moves each order by the same seconds with the same log line and event, within the
 * same ceiling as an admin's single extend: the orders it would move past it are skipped.
 */
@FunctionalInterface
public interface DeadlineExtension {
  Future<Deadlines> extend(SqlConnection conn, Long[] orderIds, int extendSeconds);

  /**
   * {@code close_at} (and {@code remind_at} with it) moved to {@code extendSeconds} past the later of {@code close_at}
   * and {@code hold_until}, to at most {@code ceilingSeconds} ({@code orders.maxTimeoutSeconds}) after the order's
   * creation, so that no order outlives the idempotency key of its create: {@link Sql#EXTEND_DEADLINES_BY_SECONDS};
   * the timers get each order's due time.
   */
  static DeadlineExtension moveCloseAtWithin(int ceilingSeconds) {
    return (conn, orderIds, extendSeconds) -> conn.preparedQuery(Sql.EXTEND_DEADLINES_BY_SECONDS)
        .execute(Tuple.of(orderIds, extendSeconds, ceilingSeconds)).map(rows -> {
          long[] ids = new long[rows.size()];
          long[] dueAt = new long[rows.size()];
          long[] remindAt = new long[rows.size()];
          int i = 0;
          for (Row row : rows) {
            ids[i] = row.getLong("id");
            dueAt[i] = row.getOffsetDateTime("due_at").toInstant().toEpochMilli();
            remindAt[i++] = row.getOffsetDateTime("remind_at") == null ? Deadlines.NONE
                : row.getOffsetDateTime("remind_at").toInstant().toEpochMilli();
          }
          return new Deadlines(ids, dueAt, remindAt);
        });
  }
}
