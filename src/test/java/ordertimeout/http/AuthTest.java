package ordertimeout.http;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import ordertimeout.config.AppConfig.ApiKey;
import ordertimeout.config.AppConfig.Role;
import ordertimeout.metrics.NodeStats;
import ordertimeout.support.Api;
import org.junit.jupiter.api.Test;

import java.time.Duration;
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

  /** RFC 9110 11.1: the scheme is case-insensitive; the key itself is not. */
  @Test
  void takesTheBearerSchemeInAnyCase() {
    Vertx vertx = Vertx.vertx();
    try {
      NodeStats stats = new NodeStats(new SimpleMeterRegistry(), 1, Duration.ofSeconds(60));
      Router router = Router.router(vertx);
      router.route().handler(auth::authenticate).handler(ctx -> ctx.response().end(Auth.caller(ctx).client()));
      router.route().failureHandler(ctx -> Problems.handle(ctx, stats));
      int port = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort();
      Api api = new Api(port);

      for (String scheme : List.of("Bearer", "bearer", "BEARER", "bEaReR")) {
        Api.Response answer = api.send(api.request("GET", "/v1/x", null, null)
            .header("Authorization", scheme + " user-key-0001"));
        assertThat(answer.status()).as(scheme + ": " + answer.body()).isEqualTo(200);
        assertThat(answer.body()).isEqualTo("shop");
      }
      for (String refused : List.of("Basic user-key-0001", "Bearer USER-KEY-0001", "Beareruser-key-0001", "bearer")) {
        Api.Response answer = api.send(api.request("GET", "/v1/x", null, null).header("Authorization", refused));
        assertThat(answer.status()).as(refused + ": " + answer.body()).isEqualTo(401);
        assertThat(answer.code()).isEqualTo("unauthorized");
      }
    } finally {
      vertx.close().await();
    }
  }
}
