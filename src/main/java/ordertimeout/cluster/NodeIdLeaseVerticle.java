package ordertimeout.cluster;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.config.AppConfig;
import ordertimeout.order.LeasedOrderIds;
import ordertimeout.store.NodeLeases;
import ordertimeout.store.NodeLeases.HeldElsewhere;
import ordertimeout.store.NodeLeases.OtherNodes;
import ordertimeout.store.NodeLeases.Taken;
import ordertimeout.store.Pools;
import ordertimeout.store.StatusCache;
import ordertimeout.timer.OwnedShards;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Holds this node's {@code node.id} by a lease in PostgreSQL, so that no two running nodes mint order ids with the
 * same one. At start it takes the lease; one held by another instance is waited for until it expires (a node that
 * died without releasing it), and a holder that renews meanwhile is a running node: the start fails. The lease is
 * renewed every third of {@code node.leaseSeconds} (half a second after a renewal that failed), with a high-water mark past every id the node can mint until
 * the renewed lease ends; ids stop when a renewal is overdue (see {@link LeasedOrderIds}) and go on once one
 * succeeds. On stop the lease is released with the exact last millisecond of the node's ids. A database that cannot
 * be reached at start does not stop the node: it starts without the lease (creates answer 503 database_unavailable)
 * and takes it at the first renewal that reaches the database.
 *
 * <p>The leases also tell whether the node is alone on its database, which its status cache needs: each take or
 * renewal that finds no other live lease lets the cache answer until the lease's end here; one that finds another
 * turns the cache off for good. A node that starts beside one whose cache is on waits until that one has turned it off
 * (at its next renewal) or its lease has run out, before it serves anything.
 *
 * <p>The lease claims the shards the node owns: each take and renewal writes them, and so does a write at once when
 * the node gains or loses shards. A shard no live lease has claimed for {@code sweep.unclaimedGraceSeconds} is swept
 * by every node of a cluster (decision 0050).
 */
public final class NodeIdLeaseVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(NodeIdLeaseVerticle.class);
  private static final long RELEASE_WAIT_MILLIS = 2000;
  /** After a renewal that failed, the next try comes this soon, so that creates resume soon after the database does. */
  private static final long RETRY_AFTER_FAILURE_MILLIS = 500;
  private static final long STATUS_CACHE_POLL_MILLIS = 200;

  private final PgConnectOptions connectOptions;
  private final LeasedOrderIds ids;
  private final int nodeId;
  private final long leaseMillis;
  private final String webhooksFingerprint;
  private final String holder = UUID.randomUUID().toString();
  private NodeLeases leases;
  private final StatusCache statusCache;
  private final OwnedShards owned;
  private long renewTimer = -1;
  private boolean renewing;
  private boolean ours;
  private boolean stopped;
  private OtherNodes othersAtStart;

  public NodeIdLeaseVerticle(AppConfig config, PgConnectOptions connectOptions, LeasedOrderIds ids,
                             StatusCache statusCache, OwnedShards owned) {
    this.connectOptions = connectOptions;
    this.ids = ids;
    this.statusCache = statusCache;
    this.owned = owned;
    this.nodeId = config.node().id();
    this.leaseMillis = config.node().leaseSeconds() * 1000L;
    this.webhooksFingerprint = config.events().webhooksFingerprint();
  }

  @Override
  public Future<?> start() {
    int renewalBound = (int) (leaseMillis / 3);
    leases = new NodeLeases(Pools.shared(vertx, Pools.NODE_LEASE, connectOptions, 1, 1,
        new AppConfig.PoolWaits(renewalBound, renewalBound, AppConfig.PoolWaits.UNBOUNDED)),
        webhooksFingerprint);
    owned.onChange(() -> context.runOnContext(changed -> claimShards()));
    return takeAtStart(null)
        .recover(failure -> failure instanceof NodeIdInUse ? Future.failedFuture(failure) : startWithoutLease(failure))
        .onSuccess(started -> renewTimer = vertx.setPeriodic(leaseMillis / 3, id -> renew()))
        .compose(started -> othersAtStart != null && othersAtStart.withStatusCache() > 0
            ? untilNoOtherStatusCache() : Future.succeededFuture());
  }

  /**
   * Until no other node answers from its status cache: each turns it off at its next renewal, which sees this node's
   * lease (within a third of its lease), or has stopped renewing for a lease past its lease's end. Until then its cache
   * could answer a status this node's writes changed.
   */
  private Future<Void> untilNoOtherStatusCache() {
    return leases.otherStatusCaches(nodeId, leaseMillis)
        .recover(failure -> {
          log.warn("could not read the other nodes' leases ({}); trying again", failure.toString());
          return Future.succeededFuture(-1L);
        })
        .compose(caches -> {
          if (caches == 0 || stopped) {
            return Future.succeededFuture();
          }
          if (caches > 0) {
            log.info("waiting for {} other node(s) to turn their status cache off", caches);
          }
          Promise<Void> off = Promise.promise();
          vertx.setTimer(STATUS_CACHE_POLL_MILLIS, id -> untilNoOtherStatusCache().onComplete(off));
          return off.future();
        });
  }

  /**
   * What a take or renewal found of the other nodes: alone, the status cache may answer until this lease's end here;
   * beside another, it goes off, and a renewal at once tells the others so.
   */
  private void seen(OtherNodes others, long sentNanos) {
    if (others.live() == 0) {
      statusCache.aloneUntil(validUntil(sentNanos));
    } else if (statusCache.sharedWithAnotherNode()) {
      log.info("{} other node(s) hold a lease on this database: order reads go to PostgreSQL from now on (the status "
          + "cache is for a node alone; it comes back at a start alone)", others.live());
      vertx.setTimer(1, id -> renew());
    }
  }

  /** A write that fails leaves the claim to the next renewal. */
  private void claimShards() {
    if (!ours || stopped) {
      return;
    }
    leases.claimShards(nodeId, holder, owned.list())
        .onFailure(failure -> log.warn("could not write this node's shards into its lease ({}); the next renewal does",
            failure.toString()));
  }

  private Future<Void> startWithoutLease(Throwable failure) {
    ids.databaseUnreachable(true);
    log.warn("could not take the lease on node.id {} at start ({}); creates answer 503 order_id_unavailable until a renewal "
        + "takes it", nodeId, failure.toString());
    return Future.succeededFuture();
  }

  /** Another running node holds this node's id: a configuration error, the node does not start. */
  static final class NodeIdInUse extends IllegalStateException {
    NodeIdInUse(String message) {
      super(message);
    }
  }

  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(renewTimer);
    long lastMillis = ids.release();
    if (!ours) {
      return Future.succeededFuture();
    }
    return leases.release(nodeId, holder, lastMillis)
        .timeout(RELEASE_WAIT_MILLIS, TimeUnit.MILLISECONDS)
        .onFailure(failure -> log.warn("could not release the lease on node.id {}; it frees when it expires: {}", nodeId, failure.toString()))
        .otherwiseEmpty();
  }

  /** {@code seen}: the other holder's lease found by the previous attempt, null on the first. */
  private Future<Void> takeAtStart(HeldElsewhere seen) {
    long sentNanos = System.nanoTime();
    long highWater = ids.highWaterFor(leaseMillis);
    return leases.take(nodeId, holder, leaseMillis, highWater, statusCache.on(), owned.list()).compose(take -> {
      if (take.taken() != null) {
        othersAtStart = take.taken().others();
        hold(take.taken(), sentNanos);
        return Future.succeededFuture();
      }
      HeldElsewhere other = take.heldElsewhere();
      if (seen != null && !other.expiresAt().isEqual(seen.expiresAt())) {
        return Future.failedFuture(new NodeIdInUse("node.id " + nodeId + " is in use by a running node (instance "
            + other.holder() + " renewed its lease while this one waited): give each node its own node.id"));
      }
      log.warn("node.id {} is leased to instance {} until {}: a node that stopped without releasing it, or one still running; "
          + "waiting for the lease to expire", nodeId, other.holder(), other.expiresAt());
      Promise<Void> retried = Promise.promise();
      vertx.setTimer(other.expiresInMillis() + 100, id -> takeAtStart(other).onComplete(retried));
      return retried.future();
    });
  }

  private void hold(Taken taken, long sentNanos) {
    if (!ours) {
      ids.startAfter(taken.previousHighWaterMillis());
      ours = true;
      log.info("node.id {} leased to this node (instance {}); its order ids start after millisecond {}",
          nodeId, holder, taken.previousHighWaterMillis());
    }
    ids.heldUntil(taken.highWaterMillis(), validUntil(sentNanos));
    seen(taken.others(), sentNanos);
    renewAgainIfAnsweredTooLate(sentNanos);
  }

  /**
   * A renewal that hung while the database was away and is answered once it is back gives a validity that has
   * already ended here: the next renewal goes at once rather than a third of the lease later.
   */
  private void renewAgainIfAnsweredTooLate(long sentNanos) {
    if (ids.lapsed(validUntil(sentNanos))) {
      vertx.setTimer(1, id -> renew());
    }
  }

  /**
   * The database counts the lease from when it ran the statement, after {@code sentNanos}; counted here from
   * {@code sentNanos} and a tenth shorter (for clocks that run at slightly different rates), it ends here first.
   */
  private long validUntil(long sentNanos) {
    return sentNanos + TimeUnit.MILLISECONDS.toNanos(leaseMillis - leaseMillis / 10);
  }

  /** A renewal still running when the next is due makes that one skip; one that takes a third of the lease is given up. */
  private void renew() {
    if (renewing || stopped) {
      return;
    }
    renewing = true;
    long sentNanos = System.nanoTime();
    long highWater = ids.highWaterFor(leaseMillis);
    Future<Void> done = ours
        ? leases.renew(nodeId, holder, leaseMillis, highWater, statusCache.on(), owned.list()).map(others -> {
            if (others != null) {
              ids.heldUntil(highWater, validUntil(sentNanos));
              seen(others, sentNanos);
              renewAgainIfAnsweredTooLate(sentNanos);
            } else {
              ours = false;
              ids.release();
              ids.databaseUnreachable(false);
              log.error("node.id {} was taken by another instance after this node's lease expired: creates answer 503 "
                  + "order_id_unavailable until this node takes it back", nodeId);
            }
            return null;
          })
        : leases.take(nodeId, holder, leaseMillis, highWater, statusCache.on(), owned.list()).map(take -> {
            if (take.taken() != null) {
              hold(take.taken(), sentNanos);
            } else {
              ids.databaseUnreachable(false);
              log.error("node.id {} is leased to instance {} until {}: creates answer 503 order_id_unavailable; "
                  + "give each node its own node.id", nodeId, take.heldElsewhere().holder(), take.heldElsewhere().expiresAt());
            }
            return null;
          });
    // a renewal that hangs (the database unreachable, not refusing) must not keep the next ones from trying
    done.timeout(leaseMillis / 3, TimeUnit.MILLISECONDS)
        .onComplete(finished -> renewing = false)
        .onFailure(failure -> {
          ids.databaseUnreachable(true);
          log.warn("could not renew the lease on node.id {} ({}); creates answer 503 database_unavailable if that lasts past "
              + "the lease", nodeId, failure.toString());
          vertx.setTimer(RETRY_AFTER_FAILURE_MILLIS, id -> renew());
        });
  }
}
