package ordertimeout.redis;

import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigException;
import ordertimeout.config.ConfigSource;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The redis keys: off in the embedded default, overridable from the environment, wrong values named by key. */
class RedisConfigTest {
  private static AppConfig load(Map<String, String> environment) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
  }

  @Test
  void theEmbeddedDefaultRunsWithoutRedis() {
    AppConfig.Redis redis = load(Map.of()).redis();
    assertThat(redis).isEqualTo(new AppConfig.Redis("", "ot", 100, AppConfig.WhenUnreachable.LOCAL, 30));
    assertThat(redis.enabled()).isFalse();
  }

  @Test
  void everyKeyCanBeOverridden() {
    AppConfig.Redis redis = load(Map.of(
        "OT_REDIS_URL", "redis://:secret@10.0.0.5:6380/2",
        "OT_REDIS_KEY_PREFIX", "shop-a",
        "OT_REDIS_TIMEOUT_MILLIS", "250",
        "OT_REDIS_WHEN_UNREACHABLE", "deny",
        "OT_REDIS_LOCK_TTL_SECONDS", "120")).redis();
    assertThat(redis).isEqualTo(new AppConfig.Redis("redis://:secret@10.0.0.5:6380/2", "shop-a", 250,
        AppConfig.WhenUnreachable.DENY, 120));
    assertThat(redis.enabled()).isTrue();
    assertThat(load(Map.of("OT_REDIS_URL", "rediss://cache.internal:6380")).redis().enabled()).isTrue();
  }

  @Test
  void aWrongValueNamesItsKey() {
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_URL", "http://127.0.0.1:6379")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("redis.url").hasMessageContaining("http");
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_URL", "redis://:6379"))).hasMessageContaining("redis.url").hasMessageContaining("host");
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_URL", "redis://a b"))).hasMessageContaining("redis.url");
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_WHEN_UNREACHABLE", "allow"))).hasMessageContaining("redis.whenUnreachable");
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_TIMEOUT_MILLIS", "0"))).hasMessageContaining("redis.timeoutMillis");
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_LOCK_TTL_SECONDS", "soon"))).hasMessageContaining("redis.lockTtlSeconds");
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_KEY_PREFIX", "two words"))).hasMessageContaining("redis.keyPrefix");
    assertThatThrownBy(() -> load(Map.of("OT_REDIS_KEY_PREFIX", "''"))).hasMessageContaining("redis.keyPrefix");
  }
}
