package ordertimeout.close;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.store.DeadlineStore;
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
 * whole batch back; the close verticle retries, splits the batch so that its good orders close while the
 * failure lasts, gives up the bad order alone, and the sweep closes it once the database accepts it again.
 */
class CloseRollbackTest extends ServiceTestBase {
  private static final int GRACE_SECONDS = 30;

  /**
   * The sweep leaves orders overdue by less than its grace alone: the test hands the batch to the close
   * verticle itself, as the wheel would, and only the sweep's later pass is the sweep's.
   */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_SWEEP_GRACE_SECONDS", Integer.toString(GRACE_SECONDS));
  }

  @AfterEach
  void dropInjectedFailure() {
    Sql.executeDdl("DROP TRIGGER IF EXISTS inject_failure ON inventory_released");
    Sql.execute("DROP FUNCTION IF EXISTS inject_failure()");
  }

  /** Five good orders of one FINE unit each, then a poisoned one of a FINE and a POISON unit, due now; the release of POISON fails. */
  private List<Long> fiveGoodOrdersAndAPoisonedOneDueWhileTheReleaseFails() {
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
          IF NEW.sku = 'POISON' AND NEW.units > 0 THEN
            RAISE EXCEPTION 'injected failure while releasing stock';
          END IF;
          RETURN NEW;
        END $$""");
    // A close counts the units it gives back on a stripe of inventory_released (V24): that is the release that fails.
    Sql.executeDdl("CREATE TRIGGER inject_failure BEFORE INSERT OR UPDATE ON inventory_released FOR EACH ROW "
        + "EXECUTE FUNCTION inject_failure()");
    // The deadlines pass while the database refuses the stock release (overdue by less than the sweep's grace).
    Sql.execute("UPDATE orders SET close_at = now() - interval '100 milliseconds' WHERE id = ANY(?)",
        (Object) ids.toArray(Long[]::new));
    return ids;
  }

  @Test
  void aFailureMidBatchLeavesNoPartialState() {
    List<Long> ids = fiveGoodOrdersAndAPoisonedOneDueWhileTheReleaseFails();
    long[] batch = ids.stream().mapToLong(Long::longValue).toArray();

    Vertx vertx = Vertx.vertx();
    try {
      DeadlineStore store = TestDatabase.deadlineStore(vertx, 2);
      assertThatThrownBy(() -> TestService.await(store.closeDue(batch))).hasMessageContaining("injected failure");
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).as("no order closed").isEqualTo(6);
      assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).isZero();
      assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isZero();
      assertThat(api.stock("FINE").getLong("reserved")).as("no stock moved").isEqualTo(6);
      assertThat(api.stock("POISON").getLong("reserved")).isEqualTo(1);

      // Nothing half done stands in the way: once the database accepts it, the same batch closes whole.
      dropInjectedFailure();
      assertThat(TestService.await(store.closeDue(batch)).closedIds()).hasSize(6);
    } finally {
      TestService.await(vertx.close());
    }
    assertThat(api.stock("FINE").getLong("available")).isEqualTo(100);
    assertThat(api.stock("POISON").getLong("available")).isEqualTo(100);
  }

  @Test
  void aBatchTheDatabaseRefusesIsSplitSoItsGoodOrdersCloseWhileTheFailureLasts() {
    List<Long> ids = fiveGoodOrdersAndAPoisonedOneDueWhileTheReleaseFails();
    List<Long> good = ids.subList(0, 5);
    long poisoned = ids.get(5);
    long givenUpBefore = service.service().stats().closeBatchesGivenUp();
    long retriesBefore = api.stats().getLong("closeRetries");
    long wheelClosesBefore = api.stats().getJsonObject("timeoutClosesByPath").getLong("wheel");

    // One batch of all six, as the wheel hands out the orders due in a tick.
    DueOrders batch = new DueOrders(ids.stream().mapToLong(Long::longValue).toArray(), DueOrders.Path.WHEEL);
    int closed = TestService.await(service.vertx().eventBus()
        .<Integer>request(Addresses.CLOSE_DUE, batch, new DeliveryOptions().setSendTimeout(60_000))).body();

    // Still under the injected failure:
    assertThat(closed).as("orders of the batch closed (the good ones)").isEqualTo(5);
    assertThat(Sql.rows("SELECT id FROM orders WHERE id = ANY(?) AND status = 'CLOSED' AND close_reason = 'TIMEOUT'",
            (Object) good.toArray(Long[]::new)))
        .as("the good orders closed while the database still refused the poisoned one").hasSize(5);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID'", poisoned))
        .as("the poisoned order stays unpaid while the database refuses it").isEqualTo(1);
    assertThat(service.service().stats().closeBatchesGivenUp() - givenUpBefore)
        .as("batches given up: the poisoned order alone").isEqualTo(1);
    assertThat(api.stats().getLong("closeRetries") - retriesBefore).as("the failing batches were retried").isGreaterThanOrEqualTo(2);
    assertThat(api.stats().getJsonObject("timeoutClosesByPath").getLong("wheel") - wheelClosesBefore).isEqualTo(5);
    assertThat(api.stock("FINE").getLong("reserved")).as("the poisoned order's FINE unit is still held").isEqualTo(1);
    assertThat(api.stock("FINE").getLong("available")).isEqualTo(99);
    assertThat(api.stock("POISON").getLong("reserved")).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isEqualTo(5);

    // Once the database accepts it again, the sweep closes it.
    dropInjectedFailure();
    long sweepClosesBefore = api.stats().getJsonObject("timeoutClosesByPath").getLong("sweep");
    Sql.execute("UPDATE orders SET close_at = now() - ? * interval '1 second' WHERE id = ?", GRACE_SECONDS + 1, poisoned);
    Await.until("the sweep to close the poisoned order", Duration.ofSeconds(15),
        () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
    assertThat(api.stats().getJsonObject("timeoutClosesByPath").getLong("sweep") - sweepClosesBefore).isEqualTo(1);
    assertThat(api.stock("FINE").getLong("available")).isEqualTo(100);
    assertThat(api.stock("POISON").getLong("available")).isEqualTo(100);
  }
}
