package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.store.NodeLeases.HeldElsewhere;
import ordertimeout.store.NodeLeases.Take;
import ordertimeout.support.Await;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A take of a node id's lease waits for its turn (another node's take or renewal holds it) and may wait for the
 * lease's row; it judges the lease by the database clock after those waits, not from its transaction's start. The
 * time left it reports for a lease held elsewhere (a starting node tries again once it has passed) is not overstated
 * by the wait, and a lease that ran out during the wait is free.
 */
class NodeLeaseWaitTest {
  private static final int NODE_ID = 1022;
  private static final long WAIT_MILLIS = 1000;
  private static final Duration SAFETY = Duration.ofSeconds(30);

  private Vertx vertx;
  private NodeLeases leases;

  @BeforeEach
  void leaseHeldElsewhere() {
    vertx = Vertx.vertx();
    leases = new NodeLeases(Pools.shared(vertx, Pools.NODE_LEASE, TestDatabase.connectOptions(), 1, 1,
        TestDatabase.databaseConfig(Map.of()).deadlines()), "none");
    ordertimeout.support.Sql.execute("""
        INSERT INTO node_leases (node_id, holder, expires_at, id_high_water_millis, renewed_at)
        VALUES (?, 'another-instance', now() + interval '1 hour', 0, now())
        ON CONFLICT (node_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at""", NODE_ID);
  }

  /** Removed even when closing Vert.x fails: an hour's live lease would keep later classes' nodes from being alone. */
  @AfterEach
  void removeTheLease() {
    try {
      TestService.await(vertx.close());
    } finally {
      ordertimeout.support.Sql.execute("DELETE FROM node_leases WHERE node_id = ?", NODE_ID);
    }
  }

  @Test
  void theTimeLeftIsCountedFromTheEndOfTheWaitForTheTakesTurn() throws Exception {
    try (Connection other = TestDatabase.jdbc()) {
      other.setAutoCommit(false);
      ordertimeout.support.Sql.rows(other, Sql.NODE_LEASES_IN_TURN);
      Future<Take> take = takeWaitingFor("pg_advisory_xact_lock");
      Await.sleep(WAIT_MILLIS);
      ordertimeout.support.Sql.rows(other, // as a renewal that held the turn would
          "UPDATE node_leases SET expires_at = clock_timestamp() + interval '10 seconds' WHERE node_id = ?", NODE_ID);
      other.commit();
      HeldElsewhere held = TestService.await(take).heldElsewhere();
      assertThat(held).as("held by another instance").isNotNull();
      assertThat(held.expiresInMillis()).as("counted from after the wait, not from the take's start before it")
          .isBetween(0L, 10_000L);
    }
  }

  /** No statement of the service holds the row without changing it; a change would have the lock's wait read again. */
  @Test
  void theTimeLeftIsCountedFromTheEndOfTheWaitForTheRow() throws Exception {
    try (Connection other = TestDatabase.jdbc()) {
      other.setAutoCommit(false);
      ordertimeout.support.Sql.rows(other, "SELECT 1 FROM node_leases WHERE node_id = ? FOR UPDATE", NODE_ID);
      Future<Take> take = takeWaitingFor("FOR UPDATE");
      Await.sleep(WAIT_MILLIS);
      long leftAtTheEnd = ordertimeout.support.Sql.count(other, "SELECT (extract(epoch FROM expires_at - "
          + "clock_timestamp()) * 1000)::bigint FROM node_leases WHERE node_id = ?", NODE_ID);
      other.commit();
      HeldElsewhere held = TestService.await(take).heldElsewhere();
      assertThat(held).as("held by another instance").isNotNull();
      assertThat(held.expiresInMillis()).as("counted from after the wait, not from before it")
          .isLessThanOrEqualTo(leftAtTheEnd);
    }
  }

  @Test
  void aLeaseThatRanOutWhileTheTakeWaitedForItsTurnIsTaken() throws Exception {
    try (Connection other = TestDatabase.jdbc()) {
      other.setAutoCommit(false);
      ordertimeout.support.Sql.rows(other, Sql.NODE_LEASES_IN_TURN);
      Future<Take> take = takeWaitingFor("pg_advisory_xact_lock");
      ordertimeout.support.Sql.rows(other, // after the take's start: live then, over before the take's turn
          "UPDATE node_leases SET expires_at = clock_timestamp() + interval '200 milliseconds' WHERE node_id = ?",
          NODE_ID);
      Await.sleep(WAIT_MILLIS);
      other.commit();
      assertThat(TestService.await(take).taken()).as("free once its turn came").isNotNull();
    }
  }

  /** A take under way, waiting for a lock in the statement that holds {@code statementPart}. */
  private Future<Take> takeWaitingFor(String statementPart) {
    Future<Take> take = leases.take(NODE_ID, "this-instance", 10_000, 0, false, new int[0]);
    Await.until("the take waiting", SAFETY, () -> ordertimeout.support.Sql.count("SELECT count(*) FROM "
        + "pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ?", "%" + statementPart + "%") == 1);
    return take;
  }
}
