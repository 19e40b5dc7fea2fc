package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import ordertimeout.config.AppConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/** The outbox as the relay sees it. A small pool of its own, so that a slow broker never holds a close's connection. */
public final class OutboxStore {
  public static final String POOL = "order-timeout-outbox";
  private static final int POOL_SIZE = 2;

  private final Pool pool;

  public OutboxStore(Pool pool) {
    this.pool = pool;
  }

  public static OutboxStore shared(Vertx vertx, PgConnectOptions connectOptions, AppConfig.PoolWaits waits) {
    return new OutboxStore(Pools.shared(vertx, POOL, connectOptions, POOL_SIZE, 1, waits));
  }

  /** {@code payload} is the event's JSON as stored. */
  public record OutboxEvent(long eventId, long orderId, String type, String payload) {}

  /**
   * In one transaction: locks up to {@code limit} of the oldest unpublished events, hands them to
   * {@code publish}, and marks them published only when its future succeeds; when it fails, the
   * transaction rolls back and the rows wait for the next try. Returns how many were published.
   */
  public Future<Integer> publishOldest(int limit, Function<List<OutboxEvent>, Future<Void>> publish) {
    return pool.withTransaction(connection -> connection.preparedQuery(Sql.LOCK_UNPUBLISHED_OUTBOX)
        .execute(Tuple.of(limit))
        .compose(rows -> {
          List<OutboxEvent> events = new ArrayList<>(rows.size());
          for (Row row : rows) {
            events.add(new OutboxEvent(row.getLong("event_id"), row.getLong("order_id"), row.getString("type"),
                row.getString("payload")));
          }
          if (events.isEmpty()) {
            return Future.succeededFuture(0);
          }
          Long[] ids = events.stream().map(OutboxEvent::eventId).toArray(Long[]::new);
          return publish.apply(events)
              .compose(sent -> connection.preparedQuery(Sql.MARK_OUTBOX_PUBLISHED).execute(Tuple.tuple().addArrayOfLong(ids)))
              .map(marked -> events.size());
        }));
  }
}
