package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.OffsetDateTime;
import java.util.Arrays;

/** The leases on node ids in PostgreSQL; every lease time is the database's. */
public final class NodeLeases {
  private final Pool pool;
  private final String webhooksFingerprint;

  /** {@code webhooksFingerprint}: written with the lease, so that nodes whose webhooks differ are seen. */
  public NodeLeases(Pool pool, String webhooksFingerprint) {
    this.pool = pool;
    this.webhooksFingerprint = webhooksFingerprint;
  }

  /** What a take found: exactly one of the two is set. */
  public record Take(Taken taken, HeldElsewhere heldElsewhere) {}

  /**
   * The lease is this holder's now; its ids must start after {@code previousHighWaterMillis}. {@code others}: the
   * other nodes with a live lease.
   */
  public record Taken(long previousHighWaterMillis, long highWaterMillis, OtherNodes others) {}

  /**
   * The other nodes (a live lease, or one that ended lately unreleased while its status cache was on): how many, and
   * how many of them answer reads from their status cache.
   */
  public record OtherNodes(long live, long withStatusCache) {
    static OtherNodes of(Row row) {
      return new OtherNodes(row.getLong("other_nodes"), row.getLong("other_status_caches"));
    }
  }

  /** Another holder's lease, live for {@code expiresInMillis} more unless renewed. */
  public record HeldElsewhere(String holder, OffsetDateTime expiresAt, long expiresInMillis) {}

  /**
   * Takes the lease on {@code nodeId} for {@code holder} unless another holder's is live; {@code statusCacheOn}:
   * whether this node answers reads from its status cache; {@code shards}: those it owns.
   */
  public Future<Take> take(int nodeId, String holder, long leaseMillis, long highWaterMillis, boolean statusCacheOn,
                           int[] shards) {
    return pool.withTransaction(conn -> conn.query(Sql.NODE_LEASES_IN_TURN).execute()
        .compose(inTurn -> conn.preparedQuery(Sql.ADD_NODE_LEASE).execute(Tuple.of(nodeId)))
        .compose(added -> conn.preparedQuery(Sql.LOCK_NODE_LEASE).execute(Tuple.of(nodeId)))
        .compose(rows -> {
          Row lease = rows.iterator().next();
          if (lease.getBoolean("live") && !lease.getString("holder").equals(holder)) {
            return Future.succeededFuture(new Take(null, new HeldElsewhere(lease.getString("holder"),
                lease.getOffsetDateTime("expires_at"), lease.getLong("expires_in_millis"))));
          }
          long previous = lease.getLong("id_high_water_millis");
          return conn.preparedQuery(Sql.TAKE_NODE_LEASE)
              .execute(Tuple.of(nodeId, holder, leaseMillis, highWaterMillis, webhooksFingerprint, statusCacheOn,
                  boxed(shards)))
              .map(held -> {
                Row row = held.iterator().next();
                return new Take(new Taken(previous, row.getLong("id_high_water_millis"), OtherNodes.of(row)), null);
              });
        }));
  }

  /**
   * Renews this holder's lease, answering the other nodes with a live lease; null when it is not this holder's any
   * more (another took it after it expired).
   */
  public Future<OtherNodes> renew(int nodeId, String holder, long leaseMillis, long highWaterMillis,
                                  boolean statusCacheOn, int[] shards) {
    return pool.withTransaction(conn -> conn.query(Sql.NODE_LEASES_IN_TURN).execute()
        .compose(inTurn -> conn.preparedQuery(Sql.RENEW_NODE_LEASE)
            .execute(Tuple.of(nodeId, holder, leaseMillis, highWaterMillis, webhooksFingerprint, statusCacheOn,
                boxed(shards))))
        .map(rows -> rows.rowCount() == 1 ? OtherNodes.of(rows.iterator().next()) : null));
  }

  /** Writes the shards {@code holder} owns now into its lease; nothing when the lease is not its own any more. */
  public Future<Void> claimShards(int nodeId, String holder, int[] shards) {
    return pool.preparedQuery(Sql.CLAIM_NODE_SHARDS).execute(Tuple.of(nodeId, holder, boxed(shards))).mapEmpty();
  }

  /** How many other nodes than {@code nodeId} have their status cache on ({@link Sql#COUNT_OTHER_STATUS_CACHES}). */
  public Future<Long> otherStatusCaches(int nodeId, long leaseMillis) {
    return pool.preparedQuery(Sql.COUNT_OTHER_STATUS_CACHES).execute(Tuple.of(nodeId, leaseMillis))
        .map(rows -> rows.iterator().next().getLong(0));
  }

  public Future<Void> release(int nodeId, String holder, long highWaterMillis) {
    return pool.preparedQuery(Sql.RELEASE_NODE_LEASE).execute(Tuple.of(nodeId, holder, highWaterMillis)).mapEmpty();
  }

  private static Integer[] boxed(int[] shards) {
    return Arrays.stream(shards).boxed().toArray(Integer[]::new);
  }
}
