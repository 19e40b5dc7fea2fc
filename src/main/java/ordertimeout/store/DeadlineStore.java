package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.bus.Deadlines;
import ordertimeout.clock.WallClock;
import ordertimeout.order.CloseReason;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.function.ToLongFunction;

/** What the timer, the close verticle and the sweep ask of the database: batched closes, reminders, pages of deadlines. */
public final class DeadlineStore {
  private static final OffsetDateTime BEFORE_ANY_DEADLINE = Instant.EPOCH.atOffset(ZoneOffset.UTC);

  private final Pool pool;
  private final WallClock clock;
  private final StatusCache statusCache;

  /** For the timer and the sweep, which read pages and close nothing. {@code clock}: this node's, on which the wheel's deadlines are. */
  public DeadlineStore(Pool pool, WallClock clock) {
    this(pool, clock, StatusCache.OFF);
  }

  /** For the close verticle: {@code statusCache} keeps the orders of each close batch closed, or forgets them. */
  public DeadlineStore(Pool pool, WallClock clock, StatusCache statusCache) {
    this.pool = pool;
    this.clock = clock;
    this.statusCache = statusCache;
  }

  /**
   * The result of a close batch: each closed order's lateness ({@code closed_at - close_at}, both
   * from the database clock), apart from that of the orders whose close waited for a started payment past their
   * deadline ({@code closed_at - hold_until}), and the orders still unpaid whose deadline (or hold) the database
   * says has not come yet (the node's clock ran ahead, or a payment started), to be put back into the wheel.
   */
  public record ClosedBatch(long[] closedIds, long[] latenessMillis, long[] heldLatenessMillis, Deadlines notYetDue,
                            long[] rowsHeld) {}

  /**
   * One transaction: the compare-and-set close of every due unpaid order among {@code ids}, stock, log, events. A
   * closed order the status cache kept when the batch began is kept closed (the statement answers only what it
   * changed).
   */
  public Future<ClosedBatch> closeDue(long[] ids) {
    return closeDue(ids, false);
  }

  /**
   * {@link #closeDue(long[])} of the orders among {@code ids} whose row no other transaction holds now, without
   * waiting for the others ({@code FOR UPDATE SKIP LOCKED}); those come back as {@code rowsHeld}, to be tried again
   * later. For a batch whose lock wait ran out: one order's row held (an operator's open transaction) must not keep
   * the rest of its batch open.
   */
  public Future<ClosedBatch> closeDueLeavingHeldRows(long[] ids) {
    return closeDue(ids, true);
  }

  private Future<ClosedBatch> closeDue(long[] requested, boolean leaveHeldRows) {
    Long[] boxedRequested = box(requested);
    return statusCache.writing(boxedRequested, write -> pool.withTransaction(conn -> {
      Future<long[]> free = leaveHeldRows
          ? conn.preparedQuery(Sql.LOCK_FREE_ORDERS).execute(Tuple.of(boxedRequested)).map(DeadlineStore::ids)
          : Future.succeededFuture(requested);
      return free.compose(ids -> closeDue(conn, write, ids, leaveHeldRows ? missing(requested, ids) : NONE));
    }));
  }

  private Future<ClosedBatch> closeDue(SqlConnection conn, StatusCache.Write write, long[] ids, long[] rowsHeld) {
    Long[] boxed = box(ids);
    return conn.preparedQuery(Sql.CLOSE_DUE).execute(Tuple.of(boxed, CloseReason.TIMEOUT.name())).compose(closed -> {
      int count = closed.size();
      long[] closedIds = new long[count];
      long[] lateness = new long[count];
      long[] heldLateness = new long[count];
      int i = 0;
      int held = 0;
      for (Row row : closed) {
        long id = row.getLong("id");
        closedIds[i + held] = id;
        long closeAt = millis(row.getOffsetDateTime("close_at"));
        OffsetDateTime holdUntil = row.getOffsetDateTime("hold_until");
        OffsetDateTime closedStamp = row.getOffsetDateTime("closed_at");
        long closedAt = millis(closedStamp);
        StatusCache.Entry kept = write.before(id);
        if (kept != null) {
          write.committed(kept.changedTo(kept.order().closed(CloseReason.TIMEOUT, closedStamp.toInstant())));
        }
        if (holdUntil != null && millis(holdUntil) > closeAt) {
          heldLateness[held++] = closedAt - millis(holdUntil);
        } else {
          lateness[i++] = closedAt - closeAt;
        }
      }
      long[] ordinary = Arrays.copyOf(lateness, i);
      long[] afterHold = Arrays.copyOf(heldLateness, held);
      Future<Deadlines> notYetDue = count == ids.length
          ? Future.succeededFuture(Deadlines.EMPTY)
          : stillUnpaid(conn, boxed);
      return notYetDue.map(later -> new ClosedBatch(closedIds, ordinary, afterHold, later, rowsHeld));
    });
  }

  private static final long[] NONE = new long[0];

  private static long[] ids(RowSet<Row> rows) {
    long[] ids = new long[rows.size()];
    int i = 0;
    for (Row row : rows) {
      ids[i++] = row.getLong(0);
    }
    return ids;
  }

  /** The ids of {@code all} not among {@code some}. */
  private static long[] missing(long[] all, long[] some) {
    Set<Long> present = new HashSet<>();
    for (long id : some) {
      present.add(id);
    }
    return Arrays.stream(all).filter(id -> !present.contains(id)).toArray();
  }

  private Future<Deadlines> stillUnpaid(SqlConnection conn, Long[] ids) {
    return conn.preparedQuery(Sql.SELECT_NOT_YET_DUE).execute(Tuple.of(ids)).map(rows -> dueLater(rows, true));
  }

  /** The result of a reminder batch: how many were sent, and the ones whose reminder is not due yet by the database clock. */
  public record RemindedBatch(int reminded, Deadlines notYetDue) {}

  public Future<RemindedBatch> remindDue(long[] ids) {
    Long[] boxed = box(ids);
    return pool.withTransaction(conn -> conn.preparedQuery(Sql.REMIND_DUE).execute(Tuple.of(boxed))
        .compose(reminded -> reminded.size() == ids.length
            ? Future.succeededFuture(new RemindedBatch(reminded.size(), Deadlines.EMPTY))
            : conn.preparedQuery(Sql.SELECT_NOT_YET_REMINDED).execute(Tuple.of(boxed))
                .map(rows -> new RemindedBatch(reminded.size(), dueLater(rows, false)))));
  }

  /** Where a keyset page ended (by deadline or by reminder time); the next page starts after it. */
  public record PageCursor(OffsetDateTime at, long id) {
    public static final PageCursor START = new PageCursor(BEFORE_ANY_DEADLINE, 0);
  }

  public record PendingPage(Deadlines deadlines, PageCursor next) {}

  /** A page of one shard's unpaid orders by deadline: their close timers. */
  public Future<PendingPage> pendingDeadlinesPage(int shard, PageCursor after, int limit) {
    return pendingPage(Sql.PENDING_DEADLINES_PAGE, true, shard, after, limit);
  }

  /** A page of one shard's reminders not sent yet, by reminder time. */
  public Future<PendingPage> pendingRemindersPage(int shard, PageCursor after, int limit) {
    return pendingPage(Sql.PENDING_REMINDERS_PAGE, false, shard, after, limit);
  }

  /**
   * A page of one shard's unpaid orders whose close waits for a started payment: close timers at the later of their
   * deadline and hold, to replace those of {@link #pendingDeadlinesPage}. Their cursor runs over the hold.
   */
  public Future<PendingPage> pendingHoldsPage(int shard, PageCursor after, int limit) {
    return pendingPage(Sql.PENDING_HOLDS_PAGE, true, shard, after, limit);
  }

  private Future<PendingPage> pendingPage(String sql, boolean close, int shard, PageCursor after, int limit) {
    return pool.preparedQuery(sql).execute(Tuple.of(shard, after.at(), after.id(), limit)).map(rows -> {
      int size = rows.size();
      long[] ids = new long[size];
      long[] due = new long[size];
      long[] none = new long[size];
      Arrays.fill(none, Deadlines.NONE);
      PageCursor last = after;
      int i = 0;
      for (Row row : rows) {
        ids[i] = row.getLong("id");
        due[i] = millis(row.getOffsetDateTime("due"));
        last = new PageCursor(row.getOffsetDateTime(row.getColumnIndex("cursor_at") >= 0 ? "cursor_at" : "due"), ids[i]);
        i++;
      }
      return new PendingPage(close ? new Deadlines(ids, due, none) : new Deadlines(ids, none, due), last);
    });
  }

  /** A page of {@link #recentPendingPage}; the next page starts after the last id. */
  public record RecentPage(Deadlines deadlines, long lastId) {}

  /**
   * A page of the unpaid orders after {@code afterId}, by id, in {@code shards}: the close timer of each at the later
   * of its deadline and hold, and its reminder if not sent. What a node that left may have created without sending
   * the timers.
   */
  public Future<RecentPage> recentPendingPage(int[] shards, long afterId, int limit) {
    return pool.preparedQuery(Sql.RECENT_PENDING_PAGE).execute(Tuple.of(afterId, boxed(shards), limit)).map(rows -> {
      Deadlines page = deadlines(rows, row -> millis(row.getOffsetDateTime("close_due")), row -> {
        OffsetDateTime remind = row.getOffsetDateTime("remind_due");
        return remind == null ? Deadlines.NONE : millis(remind);
      });
      return new RecentPage(page, page.size() == 0 ? afterId : page.orderIds()[page.size() - 1]);
    });
  }

  public record OverduePage(long[] ids, PageCursor next) {}

  /** Of the shards asked about, those with an order overdue by more than the grace, and those with a reminder. */
  public record OverdueShards(Set<Integer> closes, Set<Integer> reminders) {}

  /** Which of {@code shards} have orders or reminders overdue by more than {@code graceSeconds}: one statement. */
  public Future<OverdueShards> shardsWithOverdue(int[] shards, int graceSeconds) {
    return pool.preparedQuery(Sql.SHARDS_WITH_OVERDUE).execute(Tuple.of(boxed(shards), graceSeconds)).map(rows -> {
      Set<Integer> closes = new HashSet<>();
      Set<Integer> reminders = new HashSet<>();
      for (Row row : rows) {
        if (row.getBoolean("closes")) {
          closes.add(row.getInteger("shard"));
        }
        if (row.getBoolean("reminders")) {
          reminders.add(row.getInteger("shard"));
        }
      }
      return new OverdueShards(closes, reminders);
    });
  }

  /** The shards below {@code shardCount} that no live lease claims ({@link Sql#UNCLAIMED_SHARDS}). */
  public Future<int[]> unclaimedShards(int shardCount) {
    return pool.preparedQuery(Sql.UNCLAIMED_SHARDS).execute(Tuple.of(shardCount))
        .map(rows -> {
          int[] shards = new int[rows.size()];
          int i = 0;
          for (Row row : rows) {
            shards[i++] = row.getInteger("shard");
          }
          return shards;
        });
  }

  /** A page of one shard's unpaid orders overdue by more than {@code graceSeconds}. */
  public Future<OverduePage> overduePage(int shard, int graceSeconds, PageCursor after, int limit) {
    return overdue(Sql.OVERDUE_PAGE, shard, graceSeconds, after, limit);
  }

  /** A page of one shard's reminders not sent {@code graceSeconds} after they fell due (their orders still before the deadline). */
  public Future<OverduePage> overdueRemindersPage(int shard, int graceSeconds, PageCursor after, int limit) {
    return overdue(Sql.OVERDUE_REMINDERS_PAGE, shard, graceSeconds, after, limit);
  }

  private Future<OverduePage> overdue(String sql, int shard, int graceSeconds, PageCursor after, int limit) {
    return pool.preparedQuery(sql)
        .execute(Tuple.of(shard, graceSeconds, after.at(), after.id(), limit))
        .map(rows -> {
          long[] ids = new long[rows.size()];
          int i = 0;
          for (Row row : rows) {
            ids[i++] = row.getLong("id");
          }
          return new OverduePage(ids, lastCursor(rows, after));
        });
  }

  private static Integer[] boxed(int[] shards) {
    return Arrays.stream(shards).boxed().toArray(Integer[]::new);
  }

  private static PageCursor lastCursor(RowSet<Row> rows, PageCursor after) {
    PageCursor last = after;
    for (Row row : rows) {
      last = new PageCursor(row.getOffsetDateTime("due"), row.getLong("id"));
    }
    return last;
  }

  /**
   * Rows of ids with how long until they are due by the database clock when the statement ran, as deadlines on this
   * node's clock: a node whose clock runs ahead puts them back for exactly the time the database still wants. One due
   * already (0) goes back at once, for the next tick, whose close finds it due.
   */
  private Deadlines dueLater(RowSet<Row> rows, boolean close) {
    long now = clock.millis();
    ToLongFunction<Row> due = row -> now + Math.max(1, row.getLong("due_in_millis"));
    ToLongFunction<Row> none = row -> Deadlines.NONE;
    return close ? deadlines(rows, due, none) : deadlines(rows, none, due);
  }

  /** The orders of {@code rows} (column {@code id}) with the close and reminder times the two functions read. */
  private static Deadlines deadlines(RowSet<Row> rows, ToLongFunction<Row> closeAt, ToLongFunction<Row> remindAt) {
    int size = rows.size();
    long[] ids = new long[size];
    long[] closes = new long[size];
    long[] reminders = new long[size];
    int i = 0;
    for (Row row : rows) {
      ids[i] = row.getLong("id");
      closes[i] = closeAt.applyAsLong(row);
      reminders[i] = remindAt.applyAsLong(row);
      i++;
    }
    return new Deadlines(ids, closes, reminders);
  }

  private static long millis(OffsetDateTime time) {
    return time.toInstant().toEpochMilli();
  }

  private static Long[] box(long[] ids) {
    Long[] boxed = new Long[ids.length];
    for (int i = 0; i < ids.length; i++) {
      boxed[i] = ids[i];
    }
    return boxed;
  }
}
