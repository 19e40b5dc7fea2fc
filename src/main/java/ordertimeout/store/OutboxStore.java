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
  /** Past the publish's own bound, for the answers in flight and the mark's move after it. */
  private static final long IDLE_MARGIN_MILLIS = 5_000;

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
   *
   * <p>The transaction sits idle while {@code publish} waits for the broker, up to {@code publishWithinMillis}: longer
   * than the session's idle-in-transaction timeout may allow (10 s by default, against the producer's 15 s to deliver
   * and as long again to wait for the topic's metadata), which would end the session under a send that succeeds late,
   * let another relay take the mark and send the batch again. So this transaction's own idle timeout is that wait and
   * a margin, set with its first statement.
   */
  public Future<Integer> publishOldest(int limit, long publishWithinMillis,
                                       Function<List<OutboxEvent>, Future<Void>> publish) {
    long idleMillis = publishWithinMillis + IDLE_MARGIN_MILLIS;
    return pool.withTransaction(connection -> connection.preparedQuery(Sql.LOCK_RELAY_MARK)
        .execute(Tuple.of(Long.toString(idleMillis)))
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
