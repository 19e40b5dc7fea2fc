package ordertimeout.close;

import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A reminder the database keeps refusing past the batch's retries is given up and put back into the
 * wheel (a sweep interval later), not dropped: it is tried again, and again, and sent once the
 * database takes it; exactly once, and the other reminders are not held back meanwhile.
 *
 * <p>The sweep's grace keeps the sweep away from these reminders, so a reminder sent after it was
 * given up can only have come back through the wheel.
 */
class ReminderPutBackTest extends ServiceTestBase {
  private static final String SKU = "SKU-REMIND";
  private static final Duration SAFETY = Duration.ofSeconds(60);

  /** Timeouts of 602 s with reminders 600 s before: the reminders fall due 2 s after the creates, the deadlines long after the test. */
  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_SWEEP_GRACE_SECONDS", "3600",
        "OT_ORDERS_REMINDER_BEFORE_SECONDS", "600");
  }

  @AfterEach
  void dropInjectedFailure() {
    Sql.executeDdl("DROP TRIGGER IF EXISTS inject_reminder_failure ON orders");
    Sql.execute("DROP FUNCTION IF EXISTS inject_reminder_failure()");
  }

  @Test
  void aReminderRefusedPastItsRetriesIsPutBackAndSentExactlyOnceWhenTheDatabaseTakesIt() {
    api.setStock(SKU, 100);
    Sql.execute("""
        CREATE FUNCTION inject_reminder_failure() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.user_id = 'u-refused' AND NEW.reminded_at IS NOT NULL AND OLD.reminded_at IS NULL THEN
            RAISE EXCEPTION 'injected failure sending a reminder';
          END IF;
          RETURN NEW;
        END $$""");
    Sql.executeDdl("CREATE TRIGGER inject_reminder_failure BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION inject_reminder_failure()");
    long givenUpBefore = service.service().stats().closeBatchesGivenUp();
    long sentBefore = api.stats().getLong("remindersSent");

    List<Long> good = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      good.add(Long.parseLong(create("u-good-" + i, 602, SKU, 1).getString("id")));
    }
    long refused = Long.parseLong(create("u-refused", 602, SKU, 1).getString("id"));
    List<Long> all = new ArrayList<>(good);
    all.add(refused);

    Await.until("the refused reminder given up after its retries", SAFETY,
        () -> service.service().stats().closeBatchesGivenUp() > givenUpBefore);
    Await.until("the other reminders sent meanwhile", SAFETY, () -> good.stream().allMatch(id -> reminders(id) == 1));
    // A second give-up comes only from trying it again: it was put back into the wheel.
    Await.until("the refused reminder given up a second time, after it came back from the wheel", SAFETY,
        () -> service.service().stats().closeBatchesGivenUp() >= givenUpBefore + 2);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND reminded_at IS NULL", refused))
        .as("not reminded while the database refuses it").isEqualTo(1);
    assertThat(reminders(refused)).isZero();
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ? AND event = 'REMINDED'", refused)).isZero();

    dropInjectedFailure();
    Await.until("the refused reminder sent once the database takes it", SAFETY,
        () -> api.stats().getLong("remindersSent") - sentBefore == all.size());

    for (long id : all) {
      assertThat(reminders(id)).as("ORDER_CLOSE_REMINDER events of order %d", id).isEqualTo(1);
      assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ? AND event = 'REMINDED'", id))
          .as("reminder log lines of order %d", id).isEqualTo(1);
    }
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ANY(?) AND reminded_at IS NOT NULL AND status = 'UNPAID'",
        (Object) all.toArray(Long[]::new))).isEqualTo(all.size());
    assertThat(api.stats().getLong("remindersSent") - sentBefore).as("each reminder counted once").isEqualTo(all.size());
  }

  private static long reminders(long orderId) {
    return Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_CLOSE_REMINDER'", orderId);
  }
}
