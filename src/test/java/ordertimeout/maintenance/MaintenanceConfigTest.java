package ordertimeout.maintenance;

import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigException;
import ordertimeout.config.ConfigSource;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The reconciliation, retention and parking keys: their defaults in the embedded config, overrides, and wrong values named by key. */
class MaintenanceConfigTest {
  private static AppConfig load(Map<String, String> environment) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
  }

  @Test
  void defaults() {
    AppConfig config = load(Map.of());
    assertThat(config.reconciliation()).isEqualTo(new AppConfig.Reconciliation(24, LocalTime.of(3, 0), ZoneId.of("UTC")));
    assertThat(config.reconciliation().daily()).isTrue();
    assertThat(config.close().parkAfterFailures()).isEqualTo(10);
    assertThat(config.retention()).isEqualTo(new AppConfig.Retention(60, 1000, 72, 24, 169, 7, 90,
        new AppConfig.Partitions(600, 30, 7, 3, false, 200)));
  }

  @Test
  void overridesAndWrongValues() {
    assertThat(load(Map.of("OT_RETENTION_ORDER_LOG_HOURS", "168")).retention().orderLogHours()).isEqualTo(168);
    AppConfig berlin = load(Map.of("OT_RECONCILIATION_AT", "23:45", "OT_RECONCILIATION_ZONE", "Europe/Berlin"));
    assertThat(berlin.reconciliation().at()).isEqualTo(LocalTime.of(23, 45));
    assertThat(berlin.reconciliation().zone()).isEqualTo(ZoneId.of("Europe/Berlin"));
    assertThat(load(Map.of("OT_RECONCILIATION_AT", "off")).reconciliation().daily()).as("off: the period instead").isFalse();
    assertThatThrownBy(() -> load(Map.of("OT_RECONCILIATION_AT", "3am"))).hasMessageContaining("reconciliation.at");
    assertThatThrownBy(() -> load(Map.of("OT_RECONCILIATION_AT", "24:00"))).hasMessageContaining("reconciliation.at");
    assertThatThrownBy(() -> load(Map.of("OT_RECONCILIATION_ZONE", "Mars/Olympus"))).hasMessageContaining("reconciliation.zone");
    assertThatThrownBy(() -> load(Map.of("OT_CLOSE_PARK_AFTER_FAILURES", "0"))).hasMessageContaining("close.parkAfterFailures");
    assertThat(load(Map.of("OT_RECONCILIATION_INTERVAL_HOURS", "6")).reconciliation().intervalHours()).isEqualTo(6);
    assertThatThrownBy(() -> load(Map.of("OT_RECONCILIATION_INTERVAL_HOURS", "0")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("reconciliation.intervalHours");
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_BATCH_SIZE", "many"))).hasMessageContaining("retention.batchSize");
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_INTERVAL_SECONDS", "0"))).hasMessageContaining("retention.intervalSeconds");
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_PUBLISHED_OUTBOX_HOURS", "-1")))
        .hasMessageContaining("retention.publishedOutboxHours");
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_IDEMPOTENCY_KEY_HOURS", "0"))).hasMessageContaining("retention.idempotencyKeyHours");
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_ARCHIVE", "file"))).hasMessageContaining("retention.archive");
    assertThat(load(Map.of("OT_RETENTION_ARCHIVE", "table")).retention().partitions().archive()).isTrue();
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_PARTITION_DAYS", "0"))).hasMessageContaining("retention.partitionDays");
  }

  @Test
  void idempotencyKeysOutliveTheLongestDeadline() {
    // 7 days + 600 s of payment hold by default: 169 hours at least
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_IDEMPOTENCY_KEY_HOURS", "168")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("retention.idempotencyKeyHours")
        .hasMessageContaining("orders.maxTimeoutSeconds 604800 + orders.paymentHoldSeconds 600")
        .hasMessageContaining("set at least 169");
    assertThat(load(Map.of("OT_RETENTION_IDEMPOTENCY_KEY_HOURS", "24", "OT_ORDERS_MAX_TIMEOUT_SECONDS", "82800",
        "OT_CLIENTS_DEFAULT_MAX_TIMEOUT_SECONDS", "3600", "OT_ORDERS_PAYMENT_HOLD_SECONDS", "3600")).retention().idempotencyKeyHours()).isEqualTo(24);
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_IDEMPOTENCY_KEY_HOURS", "24", "OT_ORDERS_MAX_TIMEOUT_SECONDS", "82800",
        "OT_CLIENTS_DEFAULT_MAX_TIMEOUT_SECONDS", "3600", "OT_ORDERS_PAYMENT_HOLD_SECONDS", "3601"))).hasMessageContaining("set at least 25");
  }

}
