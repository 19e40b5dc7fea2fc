package ordertimeout.metrics;

import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigException;
import ordertimeout.config.ConfigSource;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The metrics, alarms and drain keys: their defaults, their overrides and their validation. */
class OpsConfigTest {
  private static AppConfig load(Map<String, String> environment) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
  }

  @Test
  void theEmbeddedDefaultHasTheDocumentedThresholds() {
    AppConfig config = load(Map.of());
    assertThat(config.metrics()).isEqualTo(new AppConfig.Metrics(60, 5));
    assertThat(config.alarms())
        .isEqualTo(new AppConfig.Alarms(5, 1000, 0, AppConfig.Alarms.OFF, 0, 0, 0, 0, 0, 30, 30));
    assertThat(config.drain().timeoutSeconds()).isEqualTo(10);
  }

  @Test
  void everyKeyCanBeOverriddenAndMinusOneTurnsAnAlarmOff() {
    AppConfig config = load(Map.of(
        "OT_METRICS_WINDOW_SECONDS", "30",
        "OT_ALARMS_LATENESS_P99_MILLIS", "250",
        "OT_ALARMS_OUTBOX_OLDEST_AGE_SECONDS", "600",
        "OT_ALARMS_SWEEP_CATCHES_PER_MINUTE", "-1",
        "OT_DRAIN_TIMEOUT_SECONDS", "0"));
    assertThat(config.metrics().windowSeconds()).isEqualTo(30);
    assertThat(config.alarms().latenessP99Millis()).isEqualTo(250);
    assertThat(config.alarms().outboxOldestAgeSeconds()).isEqualTo(600);
    assertThat(config.alarms().sweepCatchesPerMinute()).isEqualTo(AppConfig.Alarms.OFF);
    assertThat(config.drain().timeoutSeconds()).isZero();
  }

  @Test
  void aWrongValueNamesItsKey() {
    assertThatThrownBy(() -> load(Map.of("OT_ALARMS_LATENESS_P99_MILLIS", "-2")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("alarms.latenessP99Millis");
    assertThatThrownBy(() -> load(Map.of("OT_ALARMS_SWEEP_CATCHES_PER_MINUTE", "many"))).hasMessageContaining("alarms.sweepCatchesPerMinute");
    assertThatThrownBy(() -> load(Map.of("OT_METRICS_WINDOW_SECONDS", "0"))).hasMessageContaining("metrics.windowSeconds");
    assertThatThrownBy(() -> load(Map.of("OT_ALARMS_EVALUATE_SECONDS", "0"))).hasMessageContaining("alarms.evaluateSeconds");
    assertThatThrownBy(() -> load(Map.of("OT_DRAIN_TIMEOUT_SECONDS", "-1"))).hasMessageContaining("drain.timeoutSeconds");
  }
}
