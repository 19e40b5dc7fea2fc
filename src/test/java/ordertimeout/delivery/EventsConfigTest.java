package ordertimeout.delivery;

import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigException;
import ordertimeout.config.ConfigSource;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The webhooks and events keys: defaults, a valid webhook, wrong values named by key and never echoing the secret. */
class EventsConfigTest {
  private static final String SECRET = "a-secret-of-some-length";

  private static AppConfig load(Map<String, String> environment) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
  }

  @Test
  void defaults() {
    AppConfig config = load(Map.of());
    assertThat(config.events())
        .isEqualTo(new AppConfig.Events(List.of(), 100, 1000, 1000, 10_000, 86_400, 1000, 600_000, 32));
    assertThat(config.retention().eventsMaxDays()).isEqualTo(7);
    assertThat(config.alarms().eventsDroppedUndelivered()).isZero();
  }

  @Test
  void aWebhookWithTypesAndClient() {
    AppConfig config = load(Map.of("OT_WEBHOOKS",
        "[{url: 'https://shop.example/hooks', secret: " + SECRET + ", types: [ORDER_CLOSED], client: dev-user}]"));
    AppConfig.Webhook webhook = config.events().webhooks().get(0);
    assertThat(webhook).isEqualTo(new AppConfig.Webhook("https://shop.example/hooks", SECRET, Set.of("ORDER_CLOSED"), "dev-user"));
    assertThat(webhook.toString()).doesNotContain(SECRET);
    assertThat(config.toString()).doesNotContain(SECRET);
  }

  @Test
  void wrongValuesAreNamedByKeyWithoutTheSecret() {
    assertThatThrownBy(() -> load(Map.of("OT_WEBHOOKS", "[{url: 'ftp://x/y', secret: " + SECRET + "}]")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("webhooks[0].url").hasMessageNotContaining(SECRET);
    assertThatThrownBy(() -> load(Map.of("OT_WEBHOOKS", "[{url: 'http://x/y', secret: short}]")))
        .hasMessageContaining("webhooks[0].secret").hasMessageNotContaining("short");
    assertThatThrownBy(() -> load(Map.of("OT_WEBHOOKS", "[{url: 'http://x/y', secret: " + SECRET + ", types: [ORDER_LOST]}]")))
        .hasMessageContaining("webhooks[0].types");
    assertThatThrownBy(() -> load(Map.of("OT_WEBHOOKS", "[{url: 'http://x/y', secret: " + SECRET + ", client: nobody}]")))
        .hasMessageContaining("webhooks[0].client");
    assertThatThrownBy(() -> load(Map.of("OT_WEBHOOKS", "[{url: 'http://x/y', secret: " + SECRET + ", retries: 3}]")))
        .hasMessageContaining("webhooks[0].retries");
    assertThatThrownBy(() -> load(Map.of("OT_WEBHOOKS",
        "[{url: 'http://x/y', secret: " + SECRET + "}, {url: 'http://x/y', secret: " + SECRET + "}]")))
        .hasMessageContaining("webhooks[1].url");
    assertThatThrownBy(() -> load(Map.of("OT_EVENTS_RETRY_SECONDS", "0"))).hasMessageContaining("events.retrySeconds");
    assertThatThrownBy(() -> load(Map.of("OT_EVENTS_BACKOFF_MIN_MILLIS", "5000", "OT_EVENTS_BACKOFF_MAX_MILLIS", "1000")))
        .hasMessageContaining("events.backoffMaxMillis");
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_EVENTS_MAX_DAYS", "0"))).hasMessageContaining("retention.eventsMaxDays");
  }
}
