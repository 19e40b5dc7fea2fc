package ordertimeout.config;

import ordertimeout.store.DatabaseSetup;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.Await;
import ordertimeout.support.NodeProcess;
import ordertimeout.support.Ports;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Passwords and API keys never reach an error message or the log, whatever is wrong with the configuration. */
class SecretsTest {
  private static final String PASSWORD = "s3cret-pw-77";
  private static final String API_KEY = "s3cret-key-77";

  @TempDir
  Path folder;

  private static AppConfig load(Map<String, String> environment) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
  }

  @Test
  void aUrlKeepsEverythingButItsPassword() {
    assertThat(Secrets.withoutPasswords("cannot reach postgresql://app:" + PASSWORD + "@db.internal:5432/orders?sslmode=require"))
        .isEqualTo("cannot reach postgresql://app:***@db.internal:5432/orders?sslmode=require");
    assertThat(Secrets.withoutPasswords("redis://:" + PASSWORD + "@127.0.0.1:6379/0")).isEqualTo("redis://:***@127.0.0.1:6379/0");
    assertThat(Secrets.withoutPasswords("postgresql://app@db:5432/orders and http://127.0.0.1:8080/x"))
        .isEqualTo("postgresql://app@db:5432/orders and http://127.0.0.1:8080/x");
  }

  @Test
  void aDatabaseUrlThatCannotBeParsedIsReportedWithoutItsPassword() {
    AppConfig.Database database = TestDatabase.databaseConfig(Map.of("OT_DATABASE_URL", "postgresql://app:" + PASSWORD + "@127.0.0.1:notaport/orders"));
    assertThatThrownBy(() -> DatabaseSetup.prepare(database))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("database.url")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain(PASSWORD));
  }

  @Test
  void aRedisUrlThatIsNoUrlIsReportedWithoutItsPassword() {
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_URL", "redis://app:" + PASSWORD + "@cache host:6379")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("redis.url")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain(PASSWORD));
  }

  @Test
  void misplacedOrMalformedApiKeysAreNotEchoed() {
    Map<String, String> asText = Map.of("OT_AUTH_KEYS", API_KEY);
    Map<String, String> asRole = Map.of("OT_AUTH_KEYS", "[{key: a-long-user-key, role: " + API_KEY + ", client: shop}]");
    Map<String, String> brokenYaml = Map.of("OT_AUTH_KEYS", "[{key: \"" + API_KEY + ", role: user, client: shop}]");
    Map<String, String> asMapping = Map.of("OT_DATABASE_URL", "{password: " + API_KEY + "}");
    for (Map<String, String> environment : new Map[] {asText, asRole, brokenYaml, asMapping}) {
      assertThatThrownBy(() -> load(environment))
          .as(environment.toString())
          .isInstanceOf(ConfigException.class)
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain(API_KEY));
    }
  }

  @Test
  void aConfigurationFileThatIsNotYamlIsReportedByLineNotByItsText() throws IOException {
    Path file = folder.resolve("broken.yaml");
    Files.writeString(file, "http:\n  port: 8080\nauth:\n  keys:\n    - {key: \"" + API_KEY + ", role: user, client: shop}\n");
    assertThatThrownBy(() -> ConfigSource.load(file, name -> null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("line")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain(API_KEY));
  }

  /** What Main logs when it refuses to start or fails to reach the database: the node's whole output. */
  @Test
  void aNodeThatCannotStartLogsNoSecret() throws IOException {
    int nowhere = Ports.free();
    Map<String, Map<String, String>> cases = Map.of(
        "a database URL that cannot be parsed", Map.of("OT_DATABASE_URL", "postgresql://app:" + PASSWORD + "@127.0.0.1:notaport/orders"),
        "a database that does not answer", Map.of("OT_DATABASE_URL", "postgresql://app:" + PASSWORD + "@127.0.0.1:" + nowhere + "/orders"),
        "API keys that are not YAML", Map.of("OT_AUTH_KEYS", "[{key: \"" + API_KEY + ", role: user, client: shop}]"),
        "an API key where the role goes", Map.of("OT_AUTH_KEYS", "[{key: a-long-user-key, role: " + API_KEY + ", client: shop}]"));
    int nodeId = 900;
    for (Map.Entry<String, Map<String, String>> each : cases.entrySet()) {
      try (NodeProcess node = NodeProcess.start(nodeId++, each.getValue())) {
        Await.until("the node given " + each.getKey() + " stopped", Duration.ofSeconds(120), () -> !node.isAlive());
        String output = node.output();
        assertThat(output).as(each.getKey()).isNotBlank().doesNotContain(PASSWORD).doesNotContain(API_KEY);
      }
    }
  }
}
