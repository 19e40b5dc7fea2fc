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
   * In one transaction: locks the relay's mark (or returns 0 at once while another relay holds it), reads up to
   * {@code limit} events past it in feed order, hands them to {@code publish}, and moves the mark past them only when
   * its future succeeds; when it fails, the transaction rolls back and the events wait for the next try. Returns how
   * many were published.
   */
  public Future<Integer> publishOldest(int limit, Function<List<OutboxEvent>, Future<Void>> publish) {
    return pool.withTransaction(connection -> connection.preparedQuery(Sql.LOCK_RELAY_MARK).execute()
        .compose(mark -> {
          if (mark.size() == 0) {
            return Future.succeededFuture(0);
          }
          long relayedUpTo = mark.iterator().next().getLong("last_position");
          return connection.preparedQuery(Sql.EVENTS_AFTER_POSITION).execute(Tuple.of(relayedUpTo, limit))
              .compose(rows -> {
                List<OutboxEvent> events = new ArrayList<>(rows.size());
                long lastPosition = relayedUpTo;
                for (Row row : rows) {
                  events.add(new OutboxEvent(row.getLong("event_id"), row.getLong("order_id"), row.getString("type"),
                      row.getString("payload")));
                  lastPosition = row.getLong("position");
                }
                if (events.isEmpty()) {
                  return Future.succeededFuture(0);
                }
                long movedTo = lastPosition;
                return publish.apply(events)
                    .compose(sent -> connection.preparedQuery(Sql.MOVE_RELAY_MARK).execute(Tuple.of(movedTo)))
                    .map(moved -> events.size());
              });
        }));
  }
}
