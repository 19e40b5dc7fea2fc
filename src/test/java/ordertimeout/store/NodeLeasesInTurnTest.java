package ordertimeout.store;

import ordertimeout.support.Await;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two nodes taking their leases at once each need to know whether the other is there (a node alone answers reads
 * from its status cache): the takes run one at a time, so the second sees the first, though both began before either
 * committed.
 */
class NodeLeasesInTurnTest {
  private static final int FIRST = 1020;
  private static final int SECOND = 1021;

  @AfterEach
  void removeTheLeases() {
    ordertimeout.support.Sql.execute("DELETE FROM node_leases WHERE node_id IN (?, ?)", FIRST, SECOND);
  }

  @Test
  void ofTwoTakesAtOnceTheSecondSeesTheFirst() throws Exception {
    TestDatabase.endLeasesOfStoppedNodes();
    try (Connection first = TestDatabase.jdbc(); Connection second = TestDatabase.jdbc()) {
      first.setAutoCommit(false);
      assertThat(take(first, FIRST)).as("alone so far").isZero();
      CompletableFuture<Long> secondSees = CompletableFuture.supplyAsync(() -> {
        try {
          second.setAutoCommit(false);
          long others = take(second, SECOND);
          second.commit();
          return others;
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      Await.until("the second take under way", Duration.ofSeconds(10), () -> secondSees.isDone()
          || ordertimeout.support.Sql.count("SELECT count(*) FROM pg_stat_activity "
              + "WHERE wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%'") > 0);
      first.commit();
      assertThat(secondSees.get(10, TimeUnit.SECONDS)).as("the first node, seen by the second").isEqualTo(1);
    }
  }

  /** A take as {@link NodeLeases#take} sends it, with the status cache on: the other nodes it answers. */
  private static long take(Connection connection, int nodeId) {
    ordertimeout.support.Sql.rows(connection, Sql.NODE_LEASES_IN_TURN);
    ordertimeout.support.Sql.rows(connection, Sql.ADD_NODE_LEASE.replace("$1", Integer.toString(nodeId)));
    String take = Sql.TAKE_NODE_LEASE.replace("$1", Integer.toString(nodeId)).replace("$2", "'test'")
        .replace("$3", "10000").replace("$4", "0").replace("$5", "'none'").replace("$6", "true")
        .replace("$7", "'{}'");
    return ((Number) ordertimeout.support.Sql.rows(connection, take).get(0).get("other_nodes")).longValue();
  }
}
