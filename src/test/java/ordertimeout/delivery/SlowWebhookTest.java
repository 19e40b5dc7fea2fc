package ordertimeout.delivery;

import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.WebhookReceiver;
import ordertimeout.support.WebhookReceiver.Received;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A webhook that answers slowly takes up only its own share of the node's requests in flight: another webhook's
 * events, on the same host even, are all delivered before the slow one has answered once. With one budget for all,
 * the slow webhook's deliveries filled every place and the other waited for its answers.
 */
class SlowWebhookTest extends ServiceTestBase {
  private static final int ORDERS = 12;
  private static final int MAX_IN_FLIGHT = 4;
  private static final long SLOW_ANSWER_MILLIS = 8_000;
  private static final String SLOW_SECRET = "whsec_c2xvdy13ZWJob29rLXNlY3JldC0zMi1ieXRlcyE=";
  private static final String FAST_SECRET = "whsec_ZmFzdC13ZWJob29rLXNlY3JldC0zMi1ieXRlcyEh";

  private WebhookReceiver receiver;

  @Override
  protected Map<String, String> overrides() {
    receiver = new WebhookReceiver();
    return Map.of(
        "OT_WEBHOOKS", "[{url: '" + receiver.url("/slow") + "', secret: " + SLOW_SECRET + "},"
            + " {url: '" + receiver.url("/fast") + "', secret: " + FAST_SECRET + "}]",
        "OT_EVENTS_MAX_IN_FLIGHT", Integer.toString(MAX_IN_FLIGHT),
        "OT_EVENTS_TIMEOUT_MILLIS", "20000");
  }

  @AfterAll
  void stopReceiver() {
    receiver.close();
  }

  @Test
  void aSlowWebhookHoldsBackOnlyItsOwnDeliveries() {
    receiver.delayPath("/slow", SLOW_ANSWER_MILLIS);
    api.setStock("SKU-1", 100);
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < ORDERS; i++) {
      ids.add(create("u-" + i, 3600, "SKU-1", 1).getString("id"));
    }
    Await.until("every order's create at /fast", Duration.ofSeconds(60), () -> about("/fast", ids).size() == ORDERS);
    long fastDone = about("/fast", ids).stream().mapToLong(Received::receivedNanos).max().orElseThrow();
    Await.until("the slow webhook's first answers", Duration.ofSeconds(60), () -> !about("/slow", ids).isEmpty());
    long slowFirstAnswered = about("/slow", ids).stream().mapToLong(Received::answeredNanos).min().orElseThrow();
    assertThat(fastDone).as("the last event at /fast, before the slow webhook answered once (by %d ms)",
        (slowFirstAnswered - fastDone) / 1_000_000).isLessThan(slowFirstAnswered);
  }

  private List<Received> about(String path, Set<String> ids) {
    return receiver.received(path).stream().filter(r -> ids.contains(r.orderId())).toList();
  }
}
