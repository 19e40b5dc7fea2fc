package ordertimeout.http;

import ordertimeout.config.AppConfig.ApiKey;
import ordertimeout.config.AppConfig.Role;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class AuthTest {
  private final ApiKey user = new ApiKey("user-key-0001", Role.USER, "shop");
  private final ApiKey admin = new ApiKey("admin-key-0001", Role.ADMIN, "ops");
  private final Auth auth = new Auth(List.of(user, admin));

  @Test
  void findsEachConfiguredKey() {
    assertThat(auth.find("user-key-0001")).isEqualTo(user);
    assertThat(auth.find("admin-key-0001")).isEqualTo(admin);
  }

  @Test
  void refusesPrefixesExtensionsAndNearMisses() {
    assertThat(auth.find("user-key-000")).isNull();
    assertThat(auth.find("user-key-00011")).isNull();
    assertThat(auth.find("user-key-0002")).isNull();
    assertThat(auth.find("USER-KEY-0001")).isNull();
    assertThat(auth.find("")).isNull();
  }
}
