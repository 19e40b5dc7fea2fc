package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import ordertimeout.config.AppConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Events out without Kafka: the dispatcher that gives committed events their feed position and their webhook
 * deliveries, the deliveries' state, and the pull feed. The dispatcher and the sender have a small pool of their
 * own ({@link #shared}); the feed and the admin routes read through the intake pool ({@link #on}).
 */
public final class EventStore {
  public static final String POOL = "order-timeout-events";
  private static final int POOL_SIZE = 2;
  /**
   * A node's dispatcher vacuums outbox_pending after taking this many events: each leaves a dead row and index entry
   * that the next reads walk until a vacuum, and autovacuum looks at a table once a minute at best (decision 0031).
   */
  static final int VACUUM_QUEUE_AFTER = 10_000;
  /**
   * How many pending deliveries of a webhook one read of the due deliveries looks at, at most: a read costs no more
   * whatever the backlog behind them, the deliveries in backoff of a failing webhook or other nodes' shards.
   */
  public static final int LOOK_AT_MOST = 1_000;
  private static final Logger log = LoggerFactory.getLogger(EventStore.class);

  private final Pool pool;
  private long takenSinceVacuum;

  private EventStore(Pool pool) {
    this.pool = pool;
  }

  public static EventStore shared(Vertx vertx, PgConnectOptions connectOptions, AppConfig.PoolWaits waits) {
    return new EventStore(Pools.shared(vertx, POOL, connectOptions, POOL_SIZE, 1, waits));
  }

  public static EventStore on(Pool pool) {
    return new EventStore(pool);
  }

  public enum Status { PENDING, DELIVERED, FAILED }

  /** An event as the feed and a webhook show it; {@code payload} is its stored JSON. */
  public record Event(long id, String type, long orderId, Instant at, String payload, long position) {}

  /** A page of the pull feed, and the highest position retention deleted of its reader's events. */
  public record FeedPage(long deletedThrough, List<Event> events) {}

  /** A delivery to send: its event and the webhook (by url). */
  public record Due(long id, String sink, int attempts, Event event) {}

  /**
   * One webhook's walk in a read of the due deliveries: the position of the first pending delivery it met (0 when it
   * met none); of the {@link #LOOK_AT_MOST}th, when it got that far (0 otherwise: it met the end first, or stopped
   * once it had filled the webhook's room); and how many deliveries it took.
   */
  public record Walk(long first, long last, int taken) {}

  /** A read of the due deliveries: those to send, and each webhook's walk by its url. */
  public record DueRead(List<Due> due, Map<String, Walk> walks) {}

  /** A delivery as the admin listing shows it. */
  public record Delivery(long id, long eventId, long orderId, String type, String sink, Status status, int attempts,
                         Instant firstAttemptAt, Instant nextAttemptAt, String lastError, Instant deliveredAt) {}

  /**
   * One dispatcher transaction, if no other node's is running and any event waits (else 0 at once): up to {@code limit}
   * committed events are taken off the queue, those without a position get their feed positions, in event id order, and
   * a delivery per webhook that wants them. The positions follow commit order: the transactions that give them run one
   * at a time, each seeing what the previous committed. Answers how many events were taken (positioned, or positioned
   * before or deleted meanwhile). After every {@link #VACUUM_QUEUE_AFTER} events taken here, the queue is vacuumed
   * before the answer.
   */
  public Future<Integer> dispatch(int limit, List<AppConfig.Webhook> webhooks) {
    String[] sinks = webhooks.stream().map(AppConfig.Webhook::url).toArray(String[]::new);
    String[] types = webhooks.stream().map(w -> String.join(",", w.types())).toArray(String[]::new);
    String[] clients = webhooks.stream().map(w -> w.client() == null ? "" : w.client()).toArray(String[]::new);
    return pool.withTransaction(connection -> connection.query(Sql.TRY_DISPATCH_LOCK).execute()
            .compose(lock -> {
              Row row = lock.iterator().next();
              if (!row.getBoolean("locked") || !row.getBoolean("pending")) {
                return Future.succeededFuture(0);
              }
              // pipelined with the dispatch; fails the transaction with it, should it ever fail
              connection.query(Sql.PLAN_ONCE_PER_SESSION).execute();
              return connection.preparedQuery(Sql.DISPATCH_EVENTS).execute(Tuple.of(limit, sinks, types, clients))
                  .map(rows -> rows.iterator().next().getLong("taken").intValue());
            }))
        .compose(taken -> {
          takenSinceVacuum += taken;
          if (takenSinceVacuum < VACUUM_QUEUE_AFTER) {
            return Future.succeededFuture(taken);
          }
          takenSinceVacuum = 0;
          return pool.query(Sql.VACUUM_DISPATCH_QUEUE).execute()
              .transform(vacuumed -> {
                if (vacuumed.failed()) {
                  log.warn("vacuum of the dispatcher's queue failed ({}); autovacuum will do it", vacuumed.cause().toString());
                }
                return Future.succeededFuture(taken);
              });
        });
  }

  /**
   * Deliveries due now of the shards {@code shards} to the webhooks {@code sinks}, at most {@code rooms[i]} to
   * {@code sinks[i]}, leaving out {@code inFlight}; a later event of an order waits for the earlier. Each webhook's
   * pending deliveries are walked in position order from after {@code after[i]}, at most {@link #LOOK_AT_MOST} of them
   * (decision 0047); the read says where each walk went.
   */
  public Future<DueRead> due(int[] shards, Long[] inFlight, String[] sinks, Integer[] rooms, Long[] after) {
    Integer[] boxed = new Integer[shards.length];
    for (int i = 0; i < shards.length; i++) {
      boxed[i] = shards[i];
    }
    Map<String, Integer> roomOf = new HashMap<>();
    for (int i = 0; i < sinks.length; i++) {
      roomOf.put(sinks[i], rooms[i]);
    }
    return pool.preparedQuery(Sql.DUE_DELIVERIES)
        .execute(Tuple.of(boxed, inFlight, rooms, sinks, after, LOOK_AT_MOST))
        .map(rows -> {
          List<Due> due = new ArrayList<>();
          Map<String, Integer> taken = new HashMap<>();
          Map<String, Long> first = new HashMap<>();
          Map<String, Long> last = new HashMap<>();
          for (Row row : rows) {
            String sink = row.getString("sink");
            long looked = row.getLong("looked");
            if (looked == 1) {
              first.put(sink, row.getLong("position"));
            }
            if (looked == LOOK_AT_MOST) {
              last.put(sink, row.getLong("position"));
            }
            if (row.getBoolean("due") && taken.merge(sink, 1, Integer::sum) <= roomOf.get(sink)) {
              due.add(new Due(row.getLong("id"), sink, row.getInteger("attempts"),
                  new Event(row.getLong("event_id"), row.getString("type"), row.getLong("order_id"),
                      row.getOffsetDateTime("created_at").toInstant(), row.getString("payload"), 0)));
            }
          }
          Map<String, Walk> walks = new HashMap<>();
          for (String sink : sinks) {
            walks.put(sink, new Walk(first.getOrDefault(sink, 0L), last.getOrDefault(sink, 0L),
                Math.min(taken.getOrDefault(sink, 0), roomOf.get(sink))));
          }
          return new DueRead(due, walks);
        });
  }

  public Future<Void> delivered(List<Long> ids) {
    return pool.preparedQuery(Sql.DELIVERED).execute(Tuple.of(ids.toArray(Long[]::new))).mapEmpty();
  }

  /**
   * A failed attempt; the status it leaves the delivery in (FAILED once {@code retrySeconds} after the first attempt),
   * null when the delivery was no longer pending (its event deleted meanwhile).
   */
  public Future<Status> failed(long id, String error, long retryInMillis, int retrySeconds) {
    return pool.preparedQuery(Sql.DELIVERY_FAILED).execute(Tuple.of(id, error, retryInMillis, retrySeconds))
        .map(rows -> rows.size() == 0 ? null : Status.valueOf(rows.iterator().next().getString("status")));
  }

  /** Deliveries of {@code status} (any when null) with an id above {@code after}, by id, {@code limit} at most. */
  public Future<KeysetPage<Delivery>> deliveries(Status status, long after, int limit) {
    return pool.preparedQuery(Sql.LIST_DELIVERIES)
        .execute(Tuple.of(status == null ? null : status.name(), after, limit + 1))
        .map(rows -> {
          List<Delivery> list = new ArrayList<>();
          for (Row row : rows) {
            list.add(new Delivery(row.getLong("id"), row.getLong("event_id"), row.getLong("order_id"), row.getString("type"),
                row.getString("sink"), Status.valueOf(row.getString("status")), row.getInteger("attempts"),
                instant(row.getOffsetDateTime("first_attempt_at")), instant(row.getOffsetDateTime("next_attempt_at")),
                row.getString("last_error"), instant(row.getOffsetDateTime("delivered_at"))));
          }
          return KeysetPage.of(list, limit, Delivery::id);
        });
  }

  /**
   * Sends a failed delivery again: pending, due now, with a new retry period. Null when there is no such delivery,
   * else its status before (only a FAILED one is changed).
   */
  public Future<Status> retry(long id) {
    return pool.preparedQuery(Sql.RETRY_DELIVERY).execute(Tuple.of(id)).compose(rows -> rows.size() > 0
        ? Future.succeededFuture(Status.FAILED)
        : pool.preparedQuery(Sql.DELIVERY_STATUS).execute(Tuple.of(id))
            .map(found -> found.size() == 0 ? null : Status.valueOf(found.iterator().next().getString("status"))));
  }

  /** The last feed position given (0 before the first). */
  public Future<Long> lastPosition() {
    return pool.preparedQuery(Sql.LAST_FEED_POSITION).execute()
        .map(rows -> rows.iterator().next().getLong("last_position"));
  }

  /**
   * Up to {@code limit} events after feed position {@code after}, of {@code eventClient} (all when null), in feed
   * order, and the highest position retention deleted of that client's events (any client's when null; 0 when none,
   * or when {@code after} is 0), read in the same snapshot as the events.
   */
  public Future<FeedPage> feed(long after, String eventClient, int limit) {
    return pool.preparedQuery(eventClient == null ? Sql.FEED_PAGE : Sql.FEED_PAGE_OF_CLIENT)
        .execute(eventClient == null ? Tuple.of(after, limit) : Tuple.of(after, limit, eventClient))
        .map(rows -> {
          long deletedThrough = 0;
          List<Event> events = new ArrayList<>();
          for (Row row : rows) {
            deletedThrough = row.getLong("deleted_through");
            if (row.getValue("event_id") != null) {
              events.add(new Event(row.getLong("event_id"), row.getString("type"), row.getLong("order_id"),
                  row.getOffsetDateTime("created_at").toInstant(), row.getString("payload"), row.getLong("position")));
            }
          }
          return new FeedPage(deletedThrough, events);
        });
  }

  private static Instant instant(OffsetDateTime at) {
    return at == null ? null : at.toInstant();
  }
}
