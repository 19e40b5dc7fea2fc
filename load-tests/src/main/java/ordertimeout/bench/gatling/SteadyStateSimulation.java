package ordertimeout.bench.gatling;

import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import io.gatling.javaapi.http.HttpProtocolBuilder;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.constantUsersPerSec;
import static io.gatling.javaapi.core.CoreDsl.jsonPath;
import static io.gatling.javaapi.core.CoreDsl.pause;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

/**
 * Steady state: orders arrive at a constant rate with timeouts spread over 5-15 s; 60% of them are paid
 * at a random moment before their deadline, the rest are left to close on time. System properties:
 * baseUrl, rate (default 2000), duration (default 60 s), apiKey (a user key, dev-user-key). The closes
 * are measured afterwards from the database by SteadyStateBenchmark.
 */
public class SteadyStateSimulation extends Simulation {
  private final String baseUrl = System.getProperty("baseUrl", "http://127.0.0.1:8080");
  private final int rate = Integer.getInteger("rate", 2000);
  private final int seconds = Integer.getInteger("duration", 60);

  private final HttpProtocolBuilder protocol = http.baseUrl(baseUrl)
      .header("Authorization", "Bearer " + System.getProperty("apiKey", "dev-user-key"))
      .contentTypeHeader("application/json")
      .shareConnections();

  private final ScenarioBuilder shopper = scenario("order, maybe pay")
      .exec(session -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        int timeout = 5 + random.nextInt(11);
        return session.set("timeout", timeout)
            .set("pays", random.nextInt(100) < 60)
            .set("payAfterMillis", (long) random.nextInt((timeout - 1) * 1000));
      })
      .exec(http("create").post("/v1/orders")
          .header("Idempotency-Key", session -> UUID.randomUUID().toString())
          .body(StringBody(session -> "{\"userId\":\"u-" + ThreadLocalRandom.current().nextInt(100_000)
              + "\",\"timeoutSeconds\":" + session.getInt("timeout")
              + ",\"items\":[{\"sku\":\"SKU-" + ThreadLocalRandom.current().nextInt(1000) + "\",\"qty\":1}]}"))
          .check(status().is(201), jsonPath("$.id").saveAs("id")))
      .exitHereIfFailed()
      .doIf(session -> session.getBoolean("pays")).then(
          pause(session -> Duration.ofMillis(session.getLong("payAfterMillis")))
              .exec(http("pay").post(session -> "/v1/orders/" + session.getString("id") + "/pay").check(status().is(200))));

  {
    setUp(shopper.injectOpen(constantUsersPerSec(rate).during(seconds))).protocols(protocol);
  }
}
