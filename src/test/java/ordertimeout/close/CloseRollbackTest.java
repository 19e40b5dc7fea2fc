package ordertimeout.close;

import io.vertx.core.Vertx;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.Pools;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A failure in the middle of a close batch (the stock release, after the compare-and-set) rolls the
 * whole batch back; the close verticle retries, splits the batch to isolate the bad order, gives it up,
 * and the sweep closes it once the database accepts it again.
 */
class CloseRollbackTest extends ServiceTestBase {

  /** Orders overdue by less than the grace are left alone by the sweep while the test closes them directly. */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_SWEEP_GRACE_SECONDS", "5");
  }

  @AfterEach
  void dropInjectedFailure() {
    Sql.execute("DROP TRIGGER IF EXISTS inject_failure ON inventory");
    Sql.execute("DROP FUNCTION IF EXISTS inject_failure()");
  }

  @Test
  void aFailureMidBatchLeavesNoPartialStateAndTheSweepClosesLater() {
    api.setStock("FINE", 100);
    api.setStock("POISON", 100);
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      ids.add(Long.parseLong(create("u-" + i, 600, "FINE", 1).getString("id")));
    }
    ids.add(Long.parseLong(create("u-poison", 600, "FINE", 1, "POISON", 1).getString("id")));
    Sql.execute("""
        CREATE FUNCTION inject_failure() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.sku = 'POISON' AND NEW.reserved < OLD.reserved THEN
            RAISE EXCEPTION 'injected failure while releasing stock';
          END IF;
          RETURN NEW;
        END $$""");
    Sql.execute("CREATE TRIGGER inject_failure BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION inject_failure()");
    long givenUpBefore = service.service().stats().closeBatchesGivenUp();

    // The deadlines pass while the database refuses the stock release.
    Sql.execute("UPDATE orders SET close_at = now() - interval '100 milliseconds' WHERE id = ANY(?)",
        (Object) ids.toArray(Long[]::new));

    Vertx vertx = Vertx.vertx();
    try {
      DeadlineStore store = new DeadlineStore(Pools.shared(vertx, Pools.DEADLINES, TestDatabase.connectOptions(), 2, 1));
      long[] batch = ids.stream().mapToLong(Long::longValue).toArray();
      assertThatThrownBy(() -> TestService.await(store.closeDue(batch))).hasMessageContaining("injected failure");
    } finally {
      TestService.await(vertx.close());
    }
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).as("no order closed").isEqualTo(6);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isZero();
    assertThat(api.stock("FINE").getLong("reserved")).as("no stock moved").isEqualTo(6);

    // Now overdue past the sweep's grace: the service's own close path meets the failure.
    Sql.execute("UPDATE orders SET close_at = now() - interval '6 seconds' WHERE id = ANY(?)",
        (Object) ids.toArray(Long[]::new));
    Await.until("the service to give up a batch after its retries", Duration.ofSeconds(10),
        () -> service.service().stats().closeBatchesGivenUp() > givenUpBefore);
    assertThat(api.stats().getLong("closeRetries")).isGreaterThanOrEqualTo(2);
    long poisoned = ids.get(5);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID'", poisoned))
        .as("the poisoned order stays unpaid while the database refuses it").isEqualTo(1);
    assertThat(api.stock("POISON").getLong("reserved")).isEqualTo(1);

    dropInjectedFailure();
    Await.until("the sweep to close every overdue order", Duration.ofSeconds(10),
        () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
    assertThat(api.stats().getJsonObject("timeoutClosesByPath").getLong("sweep")).isGreaterThanOrEqualTo(6);
    assertThat(api.stock("FINE").getLong("available")).isEqualTo(100);
    assertThat(api.stock("POISON").getLong("available")).isEqualTo(100);
  }
}
