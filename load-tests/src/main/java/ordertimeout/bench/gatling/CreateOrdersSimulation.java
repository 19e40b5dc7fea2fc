package ordertimeout.bench.gatling;

import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import io.gatling.javaapi.http.HttpProtocolBuilder;
import io.gatling.javaapi.http.HttpRequestActionBuilder;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

import static io.gatling.javaapi.core.CoreDsl.StringBody;
import static io.gatling.javaapi.core.CoreDsl.constantUsersPerSec;
import static io.gatling.javaapi.core.CoreDsl.global;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

/**
 * Creates orders with fresh idempotency keys at a constant arrival rate (open model). System
 * properties: baseUrl, rate (orders per second), duration (seconds), warmup (seconds, 5), skus (1000:
 * 1-3 items spread over SKU-0..SKU-999; 1: every order takes one unit of SKU-FLASH, a flash sale),
 * apiKey (a user key, dev-user-key).
 * The warm-up sends at the same rate first, silently: its requests are not in the statistics, so the
 * first seconds of Gatling's own JVM (p50 over 300 ms in its first second) are not
 * counted against the service. Fails (non-zero exit) unless p99 of the measured requests stays at or
 * under 50 ms with no failed request.
 */
public class CreateOrdersSimulation extends Simulation {
  private final String baseUrl = System.getProperty("baseUrl", "http://127.0.0.1:8080");
  private final int rate = Integer.getInteger("rate", 1000);
  private final int seconds = Integer.getInteger("duration", 60);
  private final int warmupSeconds = Integer.getInteger("warmup", 5);
  private final int skus = Integer.getInteger("skus", 1000);

  private final HttpProtocolBuilder protocol = http.baseUrl(baseUrl)
      .header("Authorization", "Bearer " + System.getProperty("apiKey", "dev-user-key"))
      .contentTypeHeader("application/json")
      .shareConnections();

  private final ScenarioBuilder warmUp = scenario("warm up").exec(create().silent());
  private final ScenarioBuilder measured = scenario("create orders").exec(create());

  {
    setUp(warmUp.injectOpen(constantUsersPerSec(rate).during(warmupSeconds))
        .andThen(measured.injectOpen(constantUsersPerSec(rate).during(seconds))))
        .protocols(protocol)
        .assertions(
            global().responseTime().percentile(99.0).lte(50),
            global().failedRequests().count().is(0L));
  }

  private HttpRequestActionBuilder create() {
    return http("create").post("/v1/orders")
        .header("Idempotency-Key", session -> UUID.randomUUID().toString())
        .body(StringBody(session -> body()))
        .check(status().is(201));
  }

  private String body() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    String user = "u-" + random.nextInt(100_000);
    if (skus == 1) {
      return "{\"userId\":\"" + user + "\",\"items\":[{\"sku\":\"SKU-FLASH\",\"qty\":1}]}";
    }
    int first = random.nextInt(skus);
    StringBuilder items = new StringBuilder();
    for (int i = 0, n = 1 + random.nextInt(3); i < n; i++) {
      items.append(i == 0 ? "" : ",")
          .append("{\"sku\":\"SKU-").append((first + i * 131) % skus).append("\",\"qty\":").append(1 + random.nextInt(3)).append('}');
    }
    return "{\"userId\":\"" + user + "\",\"items\":[" + items + "]}";
  }
}
