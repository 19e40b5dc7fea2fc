package ordertimeout.delivery;

import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.WebhookReceiver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * A webhook whose answer comes a byte at a time, for longer than the events' timeout, never lets its connection idle
 * out. Each attempt is given up at the timeout, and its connection closed: another webhook on the same host still gets
 * its events. Left open, each attempt kept a connection of the node's pool for that host until the receiver stopped,
 * and once they filled it the other webhook's requests waited for a connection and timed out too.
 */
class TricklingWebhookTest extends ServiceTestBase {
  private static final String TRICKLING_SECRET = "whsec_dHJpY2tsaW5nLXdlYmhvb2stc2VjcmV0LTMyLWJ5dGVz";
  private static final String FAST_SECRET = "whsec_ZmFzdC13ZWJob29rLXNlY3JldC0zMi1ieXRlcyEh";

  private WebhookReceiver receiver;

  @Override
  protected Map<String, String> overrides() {
    receiver = new WebhookReceiver();
    // maxInFlight 2 for two webhooks: a pool of four connections to the receiver's host
    return Map.of(
        "OT_WEBHOOKS", "[{url: '" + receiver.url("/trickling") + "', secret: " + TRICKLING_SECRET + "},"
            + " {url: '" + receiver.url("/fast") + "', secret: " + FAST_SECRET + "}]",
        "OT_EVENTS_MAX_IN_FLIGHT", "2",
        "OT_EVENTS_TIMEOUT_MILLIS", "1000",
        "OT_EVENTS_BACKOFF_MIN_MILLIS", "100");
  }

  @AfterAll
  void stopReceiver() {
    receiver.close();
  }

  @Test
  void aWebhookThatAnswersAByteAtATimeDoesNotHoldTheConnectionsOfAnother() {
    receiver.tricklePath("/trickling", 120_000);
    api.setStock("SKU-1", 100);
    String first = create("u-first", 3600, "SKU-1", 1).getString("id");
    Await.until("five attempts at the trickling webhook", Duration.ofSeconds(30),
        () -> receiver.received("/trickling").size() >= 5);
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < 6; i++) {
      ids.add(create("u-" + i, 3600, "SKU-1", 1).getString("id"));
    }
    Await.until("the later orders' creates at /fast", Duration.ofSeconds(15), () -> receiver.received("/fast").stream()
        .filter(r -> ids.contains(r.orderId())).count() == ids.size());
    Await.until("the first order's create at /fast", Duration.ofSeconds(1), () -> receiver.received("/fast").stream()
        .anyMatch(r -> r.orderId().equals(first)));
  }
}
