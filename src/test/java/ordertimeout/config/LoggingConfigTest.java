package ordertimeout.config;

import ordertimeout.config.AppConfig.LogFormat;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LoggingConfigTest {
  private static AppConfig.Logging load(Map<String, String> environment) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get)).logging();
  }

  @Test
  void theEmbeddedDefaultLogsTextAndQuietsTheChattyLibraries() {
    AppConfig.Logging logging = load(Map.of());
    assertThat(logging.format()).isEqualTo(LogFormat.TEXT);
    assertThat(logging.rootLevel()).as("unset: logback.xml's level stays").isNull();
    assertThat(logging.levels()).containsEntry("io.netty", "WARN").containsEntry("org.flywaydb", "WARN");
  }

  @Test
  void aConfigWithoutTheSectionLogsJson() {
    Map<String, Object> minimal = Map.of(
        "auth", Map.of("keys", List.of(Map.of("key", "dev-user-key", "role", "user", "client", "c"))),
        "orders", Map.of("categories", Map.of("physical", 1800)));
    AppConfig.Logging logging = AppConfig.from(ConfigSource.of(minimal, name -> null)).logging();
    assertThat(logging.format()).isEqualTo(LogFormat.JSON);
    assertThat(logging.rootLevel()).isNull();
    assertThat(logging.levels()).isEmpty();
  }

  @Test
  void everyLoggingKeyCanBeOverriddenFromTheEnvironment() {
    AppConfig.Logging logging = load(Map.of(
        "OT_LOGGING_FORMAT", "json",
        "OT_LOGGING_LEVEL", "debug",
        "OT_LOGGING_LEVELS", "{access: OFF, io.vertx: warn}"));
    assertThat(logging.format()).isEqualTo(LogFormat.JSON);
    assertThat(logging.rootLevel()).isEqualTo("DEBUG");
    assertThat(logging.levels()).containsExactlyInAnyOrderEntriesOf(Map.of("access", "OFF", "io.vertx", "WARN"));
  }

  @Test
  void aWrongValueStopsTheServiceNamingTheKey() {
    assertThatThrownBy(() -> load(Map.of("OT_LOGGING_FORMAT", "xml")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("logging.format");
    assertThatThrownBy(() -> load(Map.of("OT_LOGGING_LEVEL", "LOUD")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("logging.level").hasMessageContaining("LOUD");
    assertThatThrownBy(() -> load(Map.of("OT_LOGGING_LEVELS", "{io.netty: verbose}")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("logging.levels.io.netty");
    assertThatThrownBy(() -> load(Map.of("OT_LOGGING_LEVELS", "[WARN]")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("logging.levels");
  }
}
