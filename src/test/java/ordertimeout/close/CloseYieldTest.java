package ordertimeout.close;

import ordertimeout.close.HeldCloses.ReportedCreates;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.Map;

import static ordertimeout.close.HeldCloses.allowedCloses;
import static ordertimeout.close.HeldCloses.closesWaitingForStock;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * While close batches queue and creates are slow, closes yield (close.yieldToCreatesAboveMillis): the close
 * transactions allowed at once fall to one, never to none, and grow back once creates are fast again. Three closes, one
 * batch each, are held on locked stock rows, so the closes running at once can be counted as the database's lock waiters.
 */
class CloseYieldTest extends ServiceTestBase {
  private static final int MAX_IN_FLIGHT = 2;

  /** The sweep stays out of the way (grace far beyond the test); a held close waits for its row as long as the test. */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_CLOSE_MAX_IN_FLIGHT", Integer.toString(MAX_IN_FLIGHT), "OT_CLOSE_YIELD_TO_CREATES_ABOVE_MILLIS", "50",
        "OT_SWEEP_GRACE_SECONDS", "120", "OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "60000");
  }

  @Test
  void closesQueuedWhileCreatesAreSlowRunOneAtATimeAndTheRestStartOnceCreatesAreFast() throws Exception {
    String[] skus = {"HELD-A", "HELD-B", "HELD-C"};
    String[] ids = new String[skus.length];
    for (int i = 0; i < skus.length; i++) {
      api.setStock(skus[i], 10);
      ids[i] = create("u-" + i, 3, skus[i], 1).getString("id");
      Await.sleep(50); // due a few wheel ticks apart: a batch each
    }
    ReportedCreates slowCreates = new ReportedCreates(service.service().stats(), Duration.ofMillis(200));
    try (Connection holdsA = Sql.connectionHoldingStock("HELD-A");
         Connection holdsB = Sql.connectionHoldingStock("HELD-B");
         Connection holdsC = Sql.connectionHoldingStock("HELD-C")) {
      assertThat(allowedCloses(api)).as("closes allowed at once before the backlog").isEqualTo(MAX_IN_FLIGHT);
      slowCreates.start();
      Await.until("every order overdue", Duration.ofSeconds(10), () -> Sql.count(
          "SELECT count(*) FROM orders WHERE close_at < now() - interval '200 milliseconds'") == skus.length);
      // A and B hold both places, C queues: a backlog while creates are slow.
      Await.until("closes allowed at once down to one", Duration.ofSeconds(10), () -> allowedCloses(api) == 1);
      assertThat(closesWaitingForStock()).as("A and B started before the backlog").isEqualTo(2);

      holdsA.rollback();
      Await.until("A closed", Duration.ofSeconds(10), () -> "CLOSED".equals(statusOf(ids[0])));
      Await.sleep(1500);
      assertThat(closesWaitingForStock()).as("closes running while creates are slow: B alone, C still queued").isEqualTo(1);

      slowCreates.stopReporting();
      Await.until("C started once creates were fast", Duration.ofSeconds(10), () -> closesWaitingForStock() == 2);
      holdsB.rollback();
      holdsC.rollback();
      Await.until("B and C closed", Duration.ofSeconds(10), () -> "CLOSED".equals(statusOf(ids[1])) && "CLOSED".equals(statusOf(ids[2])));
      Await.until("closes allowed at once back to close.maxInFlight", Duration.ofSeconds(10), () -> allowedCloses(api) == MAX_IN_FLIGHT);
    } finally {
      slowCreates.stopReporting();
    }
  }
}
