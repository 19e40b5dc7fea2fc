package ordertimeout.http;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.OwnNode;
import ordertimeout.support.TcpProxy;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * GET /health/ready while the database goes silent (every byte between node and database held back, the
 * connections left open, as a network that drops packets does): 503 with the database DOWN, answered within
 * the readiness bound rather than when the database answers; then 200 again by itself once the database
 * answers again. A load balancer that checks with HEAD gets the same status, without the body.
 */
class ReadinessTest {
  private static final Duration SAFETY = Duration.ofSeconds(60);

  @BeforeEach
  void startAlone() {
    TestDatabase.resetForANewNode();
  }

  @Test
  void readinessTurns503WhileTheDatabaseDoesNotAnswerAndBackTo200ByItself() throws Exception {
    PgConnectOptions database = TestDatabase.connectOptions();
    try (TcpProxy proxy = TcpProxy.to(database.getHost(), database.getPort())) {
      PgConnectOptions viaProxy = new PgConnectOptions(database).setHost("127.0.0.1").setPort(proxy.port());
      try (OwnNode node = OwnNode.start(Vertx.vertx(), viaProxy, Map.of("OT_HEALTH_DATABASE_TIMEOUT_MILLIS", "500"));
           AutoCloseable reachable = proxy::restore) { // after a failure too, before the node closes
        Api api = node.api();
        Await.until("ready", SAFETY, () -> api.get("/health/ready", null).status() == 200);

        proxy.blackhole();
        for (int probe = 0; probe < 3; probe++) {
          Api.Response notReady = api.get("/health/ready", null);
          assertThat(notReady.status()).as(notReady.body()).isEqualTo(503);
          assertThat(check(notReady, "database").getString("status")).isEqualTo("DOWN");
          assertThat(check(notReady, "database").getJsonObject("data").getString("error")).as("given up at the configured bound")
              .contains("500");
        }
        assertThat(head(api, "/health/ready").status()).as("HEAD while not ready").isEqualTo(503);

        proxy.restore();
        Await.until("ready again, by itself", SAFETY, () -> api.get("/health/ready", null).status() == 200);
        assertThat(check(api.get("/health/ready", null), "database").getString("status")).isEqualTo("UP");
      }
    }
  }

  @Test
  void headAnswersTheStatusOfGetWithoutTheBody() {
    try (OwnNode node = OwnNode.start(Vertx.vertx(), TestDatabase.connectOptions(), Map.of())) {
      Api api = node.api();
      Await.until("ready", SAFETY, () -> api.get("/health/ready", null).status() == 200);
      for (String path : List.of("/health/live", "/health/ready")) {
        Api.Response head = head(api, path);
        assertThat(head.status()).as("HEAD " + path + ": " + head.body()).isEqualTo(200);
        assertThat(head.body()).as("HEAD " + path).isEmpty();
      }
    }
  }

  private static Api.Response head(Api api, String path) {
    return api.send(api.request("HEAD", path, null, null));
  }

  private static JsonObject check(Api.Response ready, String id) {
    return ready.json().getJsonArray("checks").stream().map(JsonObject.class::cast)
        .filter(check -> id.equals(check.getString("id"))).findFirst().orElseThrow();
  }
}
