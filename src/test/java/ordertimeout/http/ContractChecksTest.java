package ordertimeout.http;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.support.Api;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract's checks alone, in front of handlers that take anything: every bad input that
 * {@link BadInputTest} sends for its shape is refused by the contract with the code the service
 * answers, and the largest and smallest valid requests pass. What the contract leaves to the service
 * is only what a schema cannot say: a SKU that does not exist, a SKU listed twice.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ContractChecksTest {
  /** Left to the service: they depend on the data, or on comparing items with each other. */
  private static final Set<String> NOT_THE_CONTRACTS = Set.of("unknown_sku", "duplicate_sku");

  private Vertx vertx;
  private Api api;

  @BeforeAll
  void startRouter() {
    vertx = Vertx.vertx();
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), name -> null));
    ContractChecks contract = TestService.await(ContractChecks.load(vertx, config));
    Router router = Router.router(vertx);
    router.route("/v1/*").handler(BodyHandler.create(false).setBodyLimit(config.http().maxBodyBytes()));
    router.post("/v1/orders").handler(contract.validate("createOrder")).handler(ContractChecksTest::accept);
    router.get("/v1/orders/:id").handler(contract.validate("getOrder")).handler(ContractChecksTest::accept);
    router.post("/v1/orders/:id/pay").handler(contract.validate("payOrder")).handler(ContractChecksTest::accept);
    router.put("/v1/admin/inventory/:sku").handler(contract.validate("setInventory")).handler(ContractChecksTest::accept);
    router.post("/v1/admin/inventory/:sku/adjust").handler(contract.validate("adjustInventory")).handler(ContractChecksTest::accept);
    router.get("/v1/admin/inventory/:sku/log").handler(contract.validate("getInventoryLog")).handler(ContractChecksTest::accept);
    router.get("/v1/admin/closes").handler(contract.validate("listCloses")).handler(ContractChecksTest::accept);
    router.post("/v1/admin/reconcile").handler(contract.validate("reconcile")).handler(ContractChecksTest::accept);
    router.get("/v1/admin/orders/parked").handler(contract.validate("listParkedOrders")).handler(ContractChecksTest::accept);
    router.post("/v1/admin/orders/:id/retry").handler(contract.validate("retryParkedOrder")).handler(ContractChecksTest::accept);
    router.route().failureHandler(ctx -> {
      int status = ctx.failure() instanceof ApiException api ? api.status() : ctx.statusCode();
      // as the service's failure handler (Problems) names them
      String code = ctx.failure() instanceof ApiException api ? api.code() : status == 413 ? "payload_too_large" : "http_" + status;
      ctx.response().setStatusCode(status).putHeader("Content-Type", "application/problem+json")
          .end(new JsonObject().put("status", status).put("code", code).encode());
    });
    HttpServer server = TestService.await(vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1"));
    api = new Api(server.actualPort());
  }

  @AfterAll
  void stop() {
    TestService.await(vertx.close());
  }

  private static void accept(RoutingContext ctx) {
    ctx.response().setStatusCode(204).end();
  }

  static Stream<Arguments> badCreates() {
    return BadInputTest.badCreates();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badCreates")
  void theContractRefusesWhatTheServiceRefusesForItsShape(String what, String body, int status, String code) {
    Api.Response response = api.send(api.request("POST", "/v1/orders", null, body).header("Idempotency-Key", "k-1"));
    if (NOT_THE_CONTRACTS.contains(code)) {
      assertThat(response.status()).as("left to the service: " + response.body()).isEqualTo(204);
    } else {
      assertThat(response.status()).as(response.body()).isEqualTo(status);
      assertThat(response.code()).isEqualTo(code);
    }
  }

  static Stream<Arguments> badRequests() {
    // the key checks (401, 403) and unknown routes (404) come before the contract's checks
    return BadInputTest.badRequests().filter(args -> (int) args.get()[6] == 400);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badRequests")
  void theContractRefusesBadParametersAndBodies(String what, String method, String path, String key, String body,
                                               String idempotencyKey, int status, String code) {
    HttpRequest.Builder request = api.request(method, path, null, body);
    if (idempotencyKey != null) {
      request.header("Idempotency-Key", idempotencyKey);
    }
    Api.Response response = api.send(request);
    assertThat(response.status()).as(response.body()).isEqualTo(status);
    assertThat(response.code()).isEqualTo(code);
  }

  /** Valid requests at the edges of what the service takes (default configuration). */
  static Stream<Arguments> validEdges() {
    JsonArray fifty = new JsonArray();
    for (int i = 0; i < 50; i++) {
      fifty.add(new JsonObject().put("sku", "SKU-" + i).put("qty", 1));
    }
    String id = "u".repeat(64);
    return Stream.of(
        Arguments.of("POST", "/v1/orders", "k", new JsonObject().put("userId", "u-1").put("items", fifty).encode()),
        Arguments.of("POST", "/v1/orders", "k", "{\"userId\":\"" + id + "\",\"category\":\"virtual\",\"timeoutSeconds\":604800,"
            + "\"items\":[{\"sku\":\"a.b_c:d@e-F9\",\"qty\":10000}]}"),
        Arguments.of("POST", "/v1/orders", "k", "{\"userId\":\"u\",\"timeoutSeconds\":1,\"items\":[{\"qty\":1,\"sku\":\"S\"}]}"),
        Arguments.of("POST", "/v1/orders", "k", "{\"userId\":\"u\",\"items\":[{\"sku\":\"S\",\"qty\":2.0}]}"),
        Arguments.of("POST", "/v1/orders", "!~" + "k".repeat(253), "{\"userId\":\"u\",\"items\":[{\"sku\":\"1.5\",\"qty\":1}]}"),
        Arguments.of("POST", "/v1/orders", "a+b%20c\"", "{\"userId\":\"true\",\"items\":[{\"sku\":\"-1\",\"qty\":1}]}"),
        Arguments.of("GET", "/v1/orders/9223372036854775807", null, null),
        Arguments.of("POST", "/v1/orders/0/pay", null, "{\"ignored\": true}"),
        Arguments.of("PUT", "/v1/admin/inventory/NEW-SKU", null, "{\"available\":0}"),
        Arguments.of("POST", "/v1/admin/inventory/NO-STOCK/adjust", "k", "{\"delta\":1000000000000}"),
        Arguments.of("POST", "/v1/admin/inventory/NO-STOCK/adjust", "k", "{\"delta\":-1000000000000}"),
        Arguments.of("POST", "/v1/admin/inventory/SKU-1/adjust", "k", "{\"delta\":1}"),
        Arguments.of("POST", "/v1/admin/inventory/SKU-1/adjust", "k", "{\"delta\":-1.0}"),
        Arguments.of("GET", "/v1/admin/inventory/SKU-1/log?limit=200", null, null),
        Arguments.of("GET", "/v1/admin/inventory/SKU-1/log", null, null),
        Arguments.of("PUT", "/v1/admin/inventory/" + "S".repeat(64), null, "{\"available\":1000000000000}"),
        Arguments.of("GET", "/v1/admin/closes?limit=200", null, null),
        Arguments.of("GET", "/v1/admin/closes?limit=01", null, null),
        Arguments.of("GET", "/v1/admin/closes", null, null),
        Arguments.of("POST", "/v1/admin/reconcile", null, null),
        Arguments.of("POST", "/v1/admin/reconcile", null, "{}"),
        Arguments.of("POST", "/v1/admin/reconcile", null, "{\"repair\":false}"));
  }

  @ParameterizedTest(name = "{0} {1} {3}")
  @MethodSource("validEdges")
  void theContractTakesWhatTheServiceTakes(String method, String path, String idempotencyKey, String body) {
    HttpRequest.Builder request = api.request(method, path, null, body);
    if (idempotencyKey != null) {
      request.header("Idempotency-Key", idempotencyKey);
    }
    Api.Response response = api.send(request);
    assertThat(response.status()).as(response.body()).isEqualTo(204);
  }
}
