package ordertimeout.delivery;

import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.WebhookReceiver;
import ordertimeout.support.WebhookReceiver.Received;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A database that answers the sender's reads but refuses its writes (a trigger here; a lock or statement timeout, or
 * a standby after a failover, in production): a delivery whose new state was not written is sent again no sooner than
 * its backoff allows (1 s at first, then doubling, jittered down to half), whatever the receiver answered, and is
 * delivered once the writes go through again. Before, the next poll took it again at once, its next_attempt_at never
 * moved, and the receiver got the same event again and again.
 */
class RefusedDeliveryStateTest extends ServiceTestBase {
  private static final String SECRET = "refused-state-secret-0123456789";
  private static final long BACKOFF_MIN_MILLIS = 1000;
  private static final long BACKOFF_MAX_MILLIS = 2 * BACKOFF_MIN_MILLIS;
  private static final Duration WATCHED = Duration.ofSeconds(3);
  private static final int MAX_IN_FLIGHT = 2;

  private WebhookReceiver receiver;

  @Override
  protected Map<String, String> overrides() {
    receiver = new WebhookReceiver();
    return Map.of(
        "OT_WEBHOOKS", "[{url: '" + receiver.url("/hook") + "', secret: " + SECRET + "}]",
        "OT_EVENTS_BACKOFF_MIN_MILLIS", Long.toString(BACKOFF_MIN_MILLIS),
        "OT_EVENTS_BACKOFF_MAX_MILLIS", Long.toString(BACKOFF_MAX_MILLIS),
        "OT_EVENTS_TIMEOUT_MILLIS", "5000",
        "OT_EVENTS_MAX_IN_FLIGHT", Integer.toString(MAX_IN_FLIGHT));
  }

  @BeforeEach
  void clearReceiver() {
    receiver.clear();
  }

  @AfterAll
  void stopReceiver() {
    receiver.close();
  }

  @Test
  void anAnswered2xxWhoseDeliveredMarkIsRefusedIsSentAgainOnlyAfterItsBackoff() {
    sentAgainOnlyAfterBackoffWhileWritesAreRefusedThenDelivered(204);
  }

  @Test
  void aFailedAttemptWhoseStateIsRefusedIsSentAgainOnlyAfterItsBackoff() {
    sentAgainOnlyAfterBackoffWhileWritesAreRefusedThenDelivered(500);
  }

  private void sentAgainOnlyAfterBackoffWhileWritesAreRefusedThenDelivered(int answer) {
    api.setStock("SKU-1", 100);
    receiver.answer("/hook", answer);
    refuseDeliveryWrites();
    String id;
    try {
      id = create("u-1", 3600, "SKU-1", 1).getString("id");
      Await.until("the first attempt", Duration.ofSeconds(30), () -> !attempts(id).isEmpty());
      Await.sleep(WATCHED.toMillis() + 500);
      long first = attempts(id).get(0).receivedNanos();
      List<Received> watched = attempts(id).stream()
          .filter(attempt -> attempt.receivedNanos() - first <= WATCHED.toNanos()).toList();
      assertThat(watched).extracting(Received::id).as("one event").containsOnly(watched.get(0).id());
      assertThat(watched.size()).as("attempts within %s of the first, answered %d, none written", WATCHED, answer)
          .isBetween(2, 4); // holds of 0.5-1, 1-2, 1-2 s: a fourth attempt may come at 2.5 s, a fifth not before 3.5
      for (int i = 1; i < watched.size(); i++) {
        long gapMillis = (watched.get(i).receivedNanos() - watched.get(i - 1).receivedNanos()) / 1_000_000;
        long backoff = Math.min(BACKOFF_MIN_MILLIS << (i - 1), BACKOFF_MAX_MILLIS);
        assertThat(gapMillis).as("gap before attempt %d: at least half its backoff of %d ms", i + 1, backoff)
            .isGreaterThanOrEqualTo(backoff / 2);
      }
    } finally {
      writeDeliveriesAgain();
    }

    receiver.answer("/hook", 204);
    Await.until("the delivery delivered once its state can be written", Duration.ofSeconds(30),
        () -> "DELIVERED".equals(Sql.rows("SELECT status FROM webhook_deliveries WHERE order_id = ?",
            Long.parseLong(id)).get(0).get("status")));
    List<Received> all = attempts(id);
    assertThat(all.get(all.size() - 1).id()).as("the same webhook-id").isEqualTo(all.get(0).id());
  }

  /**
   * A held delivery takes its webhook's room as one in flight does: while every state write is refused, the webhook
   * gets its first {@code events.maxInFlight} deliveries again and again, not each of its backlog in turn.
   */
  @Test
  void heldDeliveriesTakeTheirWebhooksRoom() {
    api.setStock("SKU-1", 100);
    receiver.answer("/hook", 500);
    refuseDeliveryWrites();
    Set<String> ids = new HashSet<>();
    try {
      for (int i = 0; i < 10; i++) {
        ids.add(create("u-held-" + i, 3600, "SKU-1", 1).getString("id"));
      }
      Await.until("the first attempts", Duration.ofSeconds(30), () -> !attemptedOrders(ids).isEmpty());
      Await.sleep(WATCHED.toMillis());
      assertThat(attemptedOrders(ids)).as("orders whose event was sent while every state write was refused")
          .hasSizeLessThanOrEqualTo(MAX_IN_FLIGHT);
    } finally {
      writeDeliveriesAgain();
    }
    receiver.answer("/hook", 204);
    Await.until("every order's event delivered once its state can be written", Duration.ofSeconds(60),
        () -> attemptedOrders(ids).size() == ids.size()
            && Sql.rows("SELECT 1 FROM webhook_deliveries WHERE status <> 'DELIVERED'").isEmpty());
  }

  private Set<String> attemptedOrders(Set<String> ids) {
    Set<String> attempted = new HashSet<>();
    receiver.received("/hook").forEach(received -> attempted.add(received.orderId()));
    attempted.retainAll(ids);
    return attempted;
  }

  private static void refuseDeliveryWrites() {
    Sql.execute("""
        CREATE FUNCTION refuse_delivery_writes() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          RAISE EXCEPTION 'webhook_deliveries refuses writes (test)';
        END $$""");
    Sql.executeDdl("CREATE TRIGGER refuse_delivery_writes BEFORE UPDATE ON webhook_deliveries "
        + "FOR EACH ROW EXECUTE FUNCTION refuse_delivery_writes()");
  }

  private static void writeDeliveriesAgain() {
    Sql.executeDdl("DROP TRIGGER refuse_delivery_writes ON webhook_deliveries");
    Sql.execute("DROP FUNCTION refuse_delivery_writes()");
  }

  /** The requests about order {@code id}, in the order they arrived. */
  private List<Received> attempts(String id) {
    return receiver.received("/hook").stream()
        .filter(received -> received.orderId().equals(id))
        .sorted(Comparator.comparingLong(Received::receivedNanos))
        .toList();
  }
}
