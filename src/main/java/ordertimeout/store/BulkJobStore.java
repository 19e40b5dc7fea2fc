package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.bus.Deadlines;
import ordertimeout.order.CloseReason;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.OrderFilter;
import ordertimeout.order.OrderRejected.Reason;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Operators' bulk jobs (table bulk_jobs, migration V9): submitted with their total, claimed by one node at a time under
 * a lease, run in batches. Each batch is one transaction that locks the job's row if this node still holds it (the
 * fence: a node whose lease was taken can commit nothing), applies the job's action to the next orders by id, and
 * records the progress; so a job resumed anywhere goes on exactly after the last committed batch, and the actions
 * themselves are compare-and-sets that a repeated order would not change twice.
 */
public final class BulkJobStore {
  public enum Kind { BULK_CLOSE, BULK_EXTEND }

  /**
   * The job as stored; {@code filter} null for a job by ids ({@code idCount} of them). A filter's job covers the
   * matching orders with ids up to {@code upperId} (the newest at submission) created by {@code createdAt} (the
   * submission's time by the database's clock, that of the transaction that counted them).
   */
  public record Job(long id, Kind kind, String status, String client, boolean byIds, int idCount, JsonObject filter,
                    Long upperId, Integer extendSeconds, long total, long done, long changed, long skipped, long failed, String owner,
                    int attempts, String error, Instant createdAt, Instant startedAt, Instant updatedAt, Instant finishedAt) {

    public boolean finished() {
      return "SUCCEEDED".equals(status) || "FAILED".equals(status);
    }

    public JsonObject toJson() {
      JsonObject target = byIds ? new JsonObject().put("ids", idCount) : new JsonObject().put("filter", filter);
      return new JsonObject()
          .put("id", Long.toString(id))
          .put("kind", kind.name())
          .put("status", status)
          .put("total", total)
          .put("done", done)
          .put("changed", changed)
          .put("skipped", skipped)
          .put("failed", failed)
          .put("target", target)
          .put("extendSeconds", extendSeconds)
          .put("client", client)
          .put("attempts", attempts)
          .put("error", error)
          .put("createdAt", iso(createdAt))
          .put("startedAt", iso(startedAt))
          .put("updatedAt", iso(updatedAt))
          .put("finishedAt", iso(finishedAt));
    }
  }

  /** A dry run: the orders matched now, and how many of them are unpaid (what a close or an extend may change). */
  public record Counts(long matched, long unpaid) {}

  /**
   * One committed batch: how many orders it processed, the ids it closed (bulk-close) or the new deadlines of the
   * orders it extended (bulk-extend), and whether the job is finished.
   */
  public record Batch(int processed, long[] closed, Deadlines extended, boolean finished) {}

  /** This node no longer holds the job (its lease ran out and another node took it, or it finished or failed). */
  public static final class LeaseLost extends RuntimeException {
    LeaseLost(long job) {
      super("job " + job + " is no longer held by this node", null, false, false);
    }
  }

  private final Pool pool;
  private final DeadlineExtension extension;
  private final StatusCache statusCache;

  /** {@code statusCache}: marks each batch's orders from before its action until its transaction ended. */
  public BulkJobStore(Pool pool, DeadlineExtension extension, StatusCache statusCache) {
    this.pool = pool;
    this.extension = extension;
    this.statusCache = statusCache;
  }

  public Future<Counts> count(Long[] ids, OrderFilter filter) {
    OrderSearch.Where where = ids != null
        ? new OrderSearch.Where(Sql.MATCH_IDS, List.of((Object) ids))
        : OrderSearch.where(filter, null);
    return pool.preparedQuery(Sql.countMatches(where.sql())).execute(where.tuple()).map(rows -> {
      Row row = rows.iterator().next();
      return new Counts(row.getLong("total"), row.getLong("unpaid"));
    });
  }

  /**
   * A new job (QUEUED), answered as JSON: by ids (each once; total the ids given), or by filter (total the orders
   * matching now). A filter's count and the job's row are written in one transaction, so the job's {@code created_at}
   * is the time the count saw the orders by (its {@code now()}). With an {@code idempotency} key (null: none) the job
   * is submitted once per key, its key stored in its transaction: a retry with the key answers what the first request
   * answered (the same job, as it was then), the key with another request {@link Reason#IDEMPOTENCY_KEY_REUSED}, and
   * while the first request with the key runs {@link Reason#REQUEST_IN_PROGRESS}.
   */
  public Future<JsonObject> submit(Kind kind, String client, Long[] ids, OrderFilter filter, Integer extendSeconds,
                                   IdempotencyKey idempotency) {
    return pool.withTransaction(conn -> idempotency == null
        ? newJob(conn, kind, client, ids, filter, extendSeconds)
        : IdempotencyKeys.lockAndFind(conn, idempotency).compose(stored -> stored != null
            ? Future.succeededFuture(new JsonObject(stored))
            : newJob(conn, kind, client, ids, filter, extendSeconds)
                .compose(job -> IdempotencyKeys.store(conn, idempotency, 202, job.encode()).map(job))));
  }

  private static Future<JsonObject> newJob(SqlConnection conn, Kind kind, String client, Long[] ids, OrderFilter filter,
                                           Integer extendSeconds) {
    if (ids != null) {
      Long[] sorted = Arrays.stream(ids).distinct().sorted().toArray(Long[]::new);
      return insert(conn, kind, client, sorted, null, null, extendSeconds, sorted.length);
    }
    OrderSearch.Where where = OrderSearch.where(filter, null);
    return conn.preparedQuery(Sql.countMatches(where.sql())).execute(where.tuple()).compose(rows -> {
      Row row = rows.iterator().next();
      return insert(conn, kind, client, null, filter.toJson(), row.getLong("upper_id"), extendSeconds,
          row.getLong("total"));
    });
  }

  private static Future<JsonObject> insert(SqlConnection conn, Kind kind, String client, Long[] ids, JsonObject filter,
                                           Long upperId, Integer extendSeconds, long total) {
    return conn.preparedQuery(Sql.INSERT_JOB)
        .execute(Tuple.tuple().addString(kind.name()).addString(client).addArrayOfLong(ids).addValue(filter)
            .addLong(upperId).addInteger(extendSeconds).addLong(total))
        .map(rows -> toJob(rows.iterator().next()).toJson());
  }

  public Future<Optional<Job>> find(long id) {
    return pool.preparedQuery(Sql.SELECT_JOB).execute(Tuple.of(id)).map(BulkJobStore::first);
  }

  /** Up to {@code limit} jobs with ids below {@code belowId} (null: from the newest), newest first. */
  public Future<KeysetPage<Job>> page(Long belowId, int limit) {
    Tuple arguments = Tuple.of(belowId == null ? Long.MAX_VALUE : belowId, limit + 1);
    return pool.preparedQuery(Sql.JOBS_PAGE).execute(arguments).map(rows -> {
      List<Job> jobs = new ArrayList<>(rows.size());
      for (Row row : rows) jobs.add(toJob(row));
      return KeysetPage.of(jobs, limit, Job::id);
    });
  }

  /** Jobs claimed {@code maxAttempts} times whose lease ran out are failed; then the oldest free job is claimed, if any. */
  public Future<Optional<Job>> claim(String owner, long leaseMillis, int maxAttempts) {
    return pool.preparedQuery(Sql.FAIL_EXHAUSTED_JOBS).execute(Tuple.of(maxAttempts))
        .compose(failed -> pool.preparedQuery(Sql.CLAIM_JOB).execute(Tuple.of(owner, leaseMillis)))
        .map(BulkJobStore::first);
  }

  /** The next batch of up to {@code size} orders, with the job's progress, in one transaction; {@link LeaseLost} if not held. */
  public Future<Batch> runBatch(Job job, String owner, int size, long leaseMillis) {
    List<Long[]> marked = new ArrayList<>(1);
    return pool.withTransaction(conn -> conn.preparedQuery(Sql.LOCK_HELD_JOB).execute(Tuple.of(job.id(), owner))
        .compose(held -> {
          if (held.size() == 0) {
            throw new LeaseLost(job.id());
          }
          long lastId = held.iterator().next().getLong("last_id");
          return nextIds(conn, job, lastId, size).compose(ids -> ids.length == 0
              ? finish(conn, job, owner).map(none -> new Batch(0, new long[0], Deadlines.EMPTY, true))
              : apply(conn, job, marking(ids, marked)).compose(batch -> conn.preparedQuery(Sql.RECORD_BATCH)
                  .execute(Tuple.of(job.id(), ids[ids.length - 1], changed(batch), ids.length - changed(batch), leaseMillis))
                  .compose(recorded -> ids.length < size ? finish(conn, job, owner) : Future.succeededFuture())
                  .map(none -> new Batch(ids.length, batch.closed(), batch.extended(), ids.length < size))));
        })).andThen(done -> marked.forEach(statusCache::end));
  }

  /** {@code ids} marked in the status cache until the batch's transaction ended (they are chosen inside it). */
  private Long[] marking(Long[] ids, List<Long[]> marked) {
    statusCache.begin(ids);
    marked.add(ids);
    return ids;
  }

  /** Marks the job failed with {@code error}, if this node still holds it; the orders not reached count as failed. */
  public Future<Void> fail(long jobId, String owner, String error) {
    return pool.preparedQuery(Sql.FAIL_JOB).execute(Tuple.of(jobId, owner, error)).mapEmpty();
  }

  /** Frees the job's lease at once (this node stops): the next node to look goes on with it. */
  public Future<Void> release(long jobId, String owner) {
    return pool.preparedQuery(Sql.RELEASE_JOB).execute(Tuple.of(jobId, owner)).mapEmpty();
  }

  private static int changed(Batch batch) {
    return batch.closed().length + batch.extended().size();
  }

  private static Future<RowSet<Row>> finish(SqlConnection conn, Job job, String owner) {
    return conn.preparedQuery(Sql.FINISH_JOB).execute(Tuple.of(job.id(), owner));
  }

  private Future<Batch> apply(SqlConnection conn, Job job, Long[] ids) {
    return switch (job.kind()) {
      case BULK_CLOSE -> OrderStore.closeOnRequest(conn, ids, CloseReason.ADMIN, null)
          .map(closed -> new Batch(ids.length, Arrays.stream(closed).mapToLong(Long::longValue).toArray(), Deadlines.EMPTY, false));
      case BULK_EXTEND -> extension.extend(conn, ids, job.extendSeconds())
          .map(extended -> new Batch(ids.length, new long[0], extended, false));
    };
  }

  private static Future<Long[]> nextIds(SqlConnection conn, Job job, long lastId, int size) {
    Future<RowSet<Row>> rows;
    if (job.byIds()) {
      rows = conn.preparedQuery(Sql.NEXT_LISTED).execute(Tuple.of(job.id(), size));
    } else {
      OrderSearch.Where where = OrderSearch.where(OrderFilter.fromJson(job.filter()), null);
      int n = where.next();
      rows = conn.preparedQuery(Sql.nextMatches(where.sql(), n, n + 1, n + 2, n + 3))
          .execute(where.tuple(lastId, job.upperId(), job.createdAt().atOffset(ZoneOffset.UTC), size));
    }
    return rows.map(found -> {
      Long[] ids = new Long[found.size()];
      int i = 0;
      for (Row row : found) ids[i++] = row.getLong("id");
      return ids;
    });
  }

  private static Optional<Job> first(RowSet<Row> rows) {
    return rows.size() == 0 ? Optional.empty() : Optional.of(toJob(rows.iterator().next()));
  }

  private static Job toJob(Row row) {
    String filter = row.getString("filter");
    return new Job(row.getLong("id"), Kind.valueOf(row.getString("kind")), row.getString("status"), row.getString("client"),
        row.getBoolean("by_ids"), row.getInteger("id_count"), filter == null ? null : new JsonObject(filter),
        row.getLong("upper_id"), row.getInteger("extend_seconds"), row.getLong("total"), row.getLong("done"), row.getLong("changed"),
        row.getLong("skipped"), row.getLong("failed"), row.getString("owner"), row.getInteger("attempts"), row.getString("error"),
        instant(row, "created_at"), instant(row, "started_at"), instant(row, "updated_at"), instant(row, "finished_at"));
  }

  private static Instant instant(Row row, String column) {
    OffsetDateTime time = row.getOffsetDateTime(column);
    return time == null ? null : time.toInstant();
  }

  private static String iso(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
