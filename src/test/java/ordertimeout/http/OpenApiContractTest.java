package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.json.schema.JsonSchema;
import io.vertx.json.schema.OutputUnit;
import io.vertx.json.schema.SchemaRepository;
import io.vertx.openapi.contract.OpenAPIVersion;
import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The contract, src/main/resources/openapi.yaml, against the running service: the document is valid
 * OpenAPI 3.1 and is what GET /openapi.yaml serves; every example in it, request examples included, is
 * valid against its schema; every response example is produced by driving the service (with the request
 * example of the same name as the body where there is one, else the scenario's body) and the answer has
 * the documented status, media type and schema and matches the example; every bad request of
 * {@link BadInputTest} is answered as documented. Bodies the contract refuses are not request examples
 * (an OpenAPI linter rightly calls an invalid example an error): they are the scenarios' literal bodies.
 */
class OpenApiContractTest extends ServiceTestBase {
  private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "patch");
  /** Values that differ from run to run: ids and times (their presence and type are still compared). */
  private static final Set<String> VOLATILE = Set.of("id", "orderId", "createdAt", "closeAt", "remindAt", "paidAt", "closedAt",
      "at", "checkedAt", "latenessMillis", "detail", "holdUntil", "startedAt", "finishedAt", "firstFailedAt", "lastFailedAt",
      "parkedAt", "updatedAt");
  /** Operations whose numbers are counts that depend on what ran before: only their shape is compared. */
  private static final Set<String> SHAPE_ONLY = Set.of("getStats");

  private static final JsonObject SOURCE = readSource();
  /** The key of client "capped", for the examples of the per-client limits (see {@link #overrides()}). */
  private static final String CAPPED_KEY = "capped-client-key";

  private Vertx vertx;
  private SchemaRepository schemas;
  private JsonObject resolved;

  /** One documented response example: where it is, and its value. */
  record Example(String operationId, String method, String path, int status, String mediaType, String name, Object value) {
    @Override
    public String toString() {
      return operationId + " " + status + " " + name;
    }
  }

  /** What a scenario sends: the operation's method and path with these parameters, key, headers and body. */
  static final class Call {
    final Map<String, String> pathParams = new HashMap<>();
    final Map<String, String> headers = new HashMap<>();
    String query = "";
    String key;
    String body;
    Runnable cleanup = () -> {};
  }

  /** Sets up the state an example needs and says what to send; {@code call} comes with the defaults. */
  interface Scenario {
    void prepare(OpenApiContractTest test, Example example, Call call);
  }

  private static final Map<String, Scenario> SCENARIOS = scenarios();

  /**
   * The contract's edges are the global bounds (orders.*): dev-user may ask for any timeout they allow. The client
   * "capped" has the default ceiling of a day and a cap of 10 units.
   */
  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_AUTH_KEYS", "[{key: dev-user-key, role: user, client: dev-user}, {key: dev-admin-key, role: admin, client: dev-admin},"
            + " {key: " + CAPPED_KEY + ", role: user, client: capped}]",
        "OT_CLIENTS_OVERRIDES", "{dev-user: {maxTimeoutSeconds: 604800}, capped: {maxReservedUnits: 10}}");
  }

  @BeforeAll
  void loadContract() {
    vertx = Vertx.vertx();
    schemas = await(OpenAPIVersion.V3_1.getRepository(vertx, "app://"));
    // copies: vertx-openapi annotates what it validates and resolves
    OutputUnit meta = await(OpenAPIVersion.V3_1.validateContract(vertx, schemas, SOURCE.copy()));
    assertThat(meta.getValid()).as("openapi.yaml is valid OpenAPI 3.1: " + meta.getErrors()).isTrue();
    resolved = await(OpenAPIVersion.V3_1.resolve(vertx, schemas, SOURCE.copy()));
  }

  @AfterAll
  void closeVertx() {
    if (vertx != null) {
      await(vertx.close());
    }
  }

  @Test
  void servesTheDocumentWithThisNodesLimits() {
    Api.Response response = api.get("/openapi.yaml", null);
    assertThat(response.status()).isEqualTo(200);
    assertThat(response.contentType()).startsWith("application/yaml");
    JsonObject served = yaml(response.body());
    // the test service runs with the default orders.* limits, so the served document equals the source
    assertThat(served).isEqualTo(SOURCE);
  }

  @Test
  void everyRequestAndParameterExampleIsValidAgainstItsSchema() {
    int checked = 0;
    for (Map.Entry<String, JsonObject> operation : operations(resolved).entrySet()) {
      JsonObject op = operation.getValue();
      for (Object p : op.getJsonArray("parameters", new JsonArray())) {
        JsonObject parameter = (JsonObject) p;
        JsonObject schema = parameter.getJsonObject("schema");
        if (parameter.containsKey("example")) {
          assertValid(schema, strip(parameter.getValue("example")), operation.getKey() + " parameter " + parameter.getString("name"));
          checked++;
        }
        for (Map.Entry<String, Object> example : parameter.getJsonObject("examples", new JsonObject())) {
          if (example.getKey().startsWith("__")) {
            continue;
          }
          assertValid(schema, strip(((JsonObject) example.getValue()).getValue("value")),
              operation.getKey() + " parameter " + parameter.getString("name") + " example " + example.getKey());
          checked++;
        }
      }
      JsonObject requestBody = op.getJsonObject("requestBody");
      if (requestBody == null) {
        continue;
      }
      Set<String> responseExamples = new HashSet<>();
      examples().stream().filter(e -> e.operationId().equals(operation.getKey())).forEach(e -> responseExamples.add(e.name()));
      JsonObject media = requestBody.getJsonObject("content").getJsonObject("application/json");
      for (String name : media.getJsonObject("examples").fieldNames().stream().filter(n -> !n.startsWith("__")).toList()) {
        assertValid(media.getJsonObject("schema"), strip(media.getJsonObject("examples").getJsonObject(name).getValue("value")),
            operation.getKey() + " request example " + name);
        assertThat(responseExamples).as("request example %s of %s has a response example of the same name", name, operation.getKey())
            .contains(name);
        checked++;
      }
    }
    assertThat(checked).isGreaterThan(10);
  }

  /** The response examples, from the source file. */
  static Stream<Arguments> responseExamples() {
    return examples().stream().map(Arguments::of);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("responseExamples")
  void everyResponseExampleIsWhatTheServiceAnswers(Example example) {
    Scenario scenario = SCENARIOS.getOrDefault(example.operationId() + "/" + example.name(), SCENARIOS.get(example.name()));
    assertThat(scenario).as("a scenario that produces the example " + example).isNotNull();
    JsonObject operation = operations(resolved).get(example.operationId());
    Call call = new Call();
    call.key = example.path().startsWith("/v1/admin") ? Api.ADMIN_KEY : example.path().startsWith("/v1") ? Api.USER_KEY : null;
    scenario.prepare(this, example, call);
    if (call.body == null && requestExample(operation, example.name()) != null) {
      call.body = Json.encode(requestExample(operation, example.name()));
    }
    Api.Response response;
    try {
      response = send(example, call);
    } finally {
      call.cleanup.run();
    }
    assertDocumented(example.operationId(), operation, response);
    assertThat(response.status()).as("status of " + example + ": " + response.body()).isEqualTo(example.status());
    assertThat(response.contentType()).as("media type of " + example).startsWith(example.mediaType());
    JsonObject schema = operation.getJsonObject("responses").getJsonObject(Integer.toString(example.status()))
        .getJsonObject("content").getJsonObject(example.mediaType()).getJsonObject("schema");
    assertValid(schema, example.value(), "the example " + example);
    if (example.mediaType().contains("json")) {
      Object actual = Json.decodeValue(response.body());
      assertMatches(example.value(), actual, "", SHAPE_ONLY.contains(example.operationId()));
    } else {
      for (String line : ((String) example.value()).split("\n")) {
        String expected = line.startsWith("#") ? line : line.substring(0, line.lastIndexOf(' ') + 1);
        assertThat(response.body()).as("the example " + example + " line " + line).contains(expected);
      }
    }
  }

  static Stream<Arguments> badInputs() {
    return Stream.concat(
        BadInputTest.badCreates().map(args -> Arguments.of(args.get()[0], "POST", "/v1/orders", Api.USER_KEY, args.get()[1], "bad-key")),
        BadInputTest.badRequests().map(args -> Arguments.of(args.get()[0], args.get()[1], args.get()[2], args.get()[3], args.get()[4],
            args.get()[5])));
  }

  /** The answers to bad requests are documented too: their status for that operation, and their code in its schema. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("badInputs")
  void everyAnswerToBadInputIsDocumented(String what, String method, String path, String key, String body, String idempotencyKey) {
    api.setStock("SKU-1", 10);
    HttpRequest.Builder request = api.request(method, path, key, body);
    if (idempotencyKey != null) {
      request.header("Idempotency-Key", idempotencyKey);
    }
    Api.Response response = api.send(request);
    Map.Entry<String, JsonObject> operation = operationFor(method, path);
    if (operation == null) {
      assertThat(response.status()).as("an undocumented path answers 404").isEqualTo(404);
      assertThat(response.code()).isEqualTo("not_found");
      return;
    }
    assertDocumented(operation.getKey(), operation.getValue(), response);
  }

  /** The valid requests at the edges of the contract pass the service's own checks too. */
  @ParameterizedTest(name = "{0} {1} {3}")
  @MethodSource("ordertimeout.http.ContractChecksTest#validEdges")
  void theServiceTakesWhatTheContractTakes(String method, String path, String idempotencyKey, String body) {
    for (int i = 0; i < 50; i++) {
      api.setStock("SKU-" + i, 10_000);
    }
    for (String sku : List.of("a.b_c:d@e-F9", "S", "1.5", "-1")) {
      api.setStock(sku, 10_000);
    }
    HttpRequest.Builder request = api.request(method, path, path.startsWith("/v1/admin") ? Api.ADMIN_KEY : Api.USER_KEY, body);
    if (idempotencyKey != null) {
      request.header("Idempotency-Key", idempotencyKey);
    }
    Api.Response response = api.send(request);
    assertThat(response.status()).as(response.body()).isIn(200, 201, 404);
    if (response.status() == 404) {
      assertThat(response.code()).as("a valid id of no order, or SKU of no stock").isIn("order_not_found", "inventory_not_found");
    }
  }

  // ---- scenarios

  private static Map<String, Scenario> scenarios() {
    Map<String, Scenario> s = new HashMap<>();
    // shared responses (components), for every operation that lists them
    s.put("noKey", (t, e, c) -> c.key = null);
    s.put("userKey", (t, e, c) -> c.key = Api.USER_KEY);
    s.put("tooLarge", (t, e, c) -> c.body = "{\"userId\":\"" + "x".repeat(70_000) + "\"}");
    s.put("notANumber", (t, e, c) -> c.pathParams.put("id", "abc"));
    s.put("noSuchOrder", (t, e, c) -> c.pathParams.put("id", "12345"));
    s.put("paid", (t, e, c) -> {
      String id = t.order("SKU-1", 2);
      assertThat(t.api.pay(id).status()).isEqualTo(200);
      c.pathParams.put("id", id);
    });
    s.put("space", (t, e, c) -> c.pathParams.put("sku", "SKU%201"));

    // createOrder: the request example of the same name is the body
    for (String name : List.of("minimal", "unknownSku", "duplicateSku", "insufficientStock")) {
      s.put("createOrder/" + name, (t, e, c) -> {
        t.api.setStock("SKU-1", 100);
        c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
      });
    }
    // createOrder: bodies the contract refuses, so not request examples (BadInputTest sends them too)
    Map<String, String> badCreates = Map.of(
        "unknownField", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1}],\"coupon\":\"SAVE10\"}",
        "emptyItems", "{\"userId\":\"u-1\",\"items\":[]}",
        "qtyZero", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":0}]}",
        "unknownCategory", "{\"userId\":\"u-1\",\"category\":\"rare\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1}]}",
        "timeoutTooLong", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1}],\"timeoutSeconds\":604801}");
    badCreates.forEach((name, body) -> s.put("createOrder/" + name, (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
      c.body = body;
    }));
    s.put("createOrder/timeoutOverClientCeiling", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      c.key = CAPPED_KEY;
      c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
      c.body = "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1}],\"timeoutSeconds\":90000}";
    });
    s.put("createOrder/clientUnitsCap", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      assertThat(t.api.as(CAPPED_KEY).createOrder(UUID.randomUUID().toString(), orderBody("u-1", 600, "SKU-1", 5)).status())
          .isEqualTo(201);
      c.key = CAPPED_KEY;
      c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
      c.body = orderBody("u-2", 600, "SKU-1", 6).encode();
    });
    s.put("createOrder/categoryAndTimeout", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      t.api.setStock("SKU-2", 100);
      c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
    });
    s.put("createOrder/malformedJson", (t, e, c) -> {
      c.headers.put("Idempotency-Key", "k-1");
      c.body = "{\"userId\":";
    });
    s.put("createOrder/missingIdempotencyKey", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      c.body = "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1}]}";
    });
    s.put("createOrder/keyReused", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      String key = UUID.randomUUID().toString();
      assertThat(t.api.createOrder(key, orderBody("u-1", 600, "SKU-1", 1)).status()).isEqualTo(201);
      c.headers.put("Idempotency-Key", key);
      c.body = orderBody("u-1", 600, "SKU-1", 2).encode();
    });

    s.put("getOrder/unpaid", (t, e, c) -> c.pathParams.put("id", t.order("SKU-1", 2)));
    s.put("payOrder/paid", (t, e, c) -> c.pathParams.put("id", t.order("SKU-1", 2)));
    s.put("payOrder/closed", (t, e, c) -> {
      String id = t.order("SKU-1", 2);
      assertThat(t.api.cancel(id).status()).isEqualTo(200);
      c.pathParams.put("id", id);
    });
    s.put("cancelOrder/cancelled", (t, e, c) -> c.pathParams.put("id", t.order("SKU-1", 2)));
    s.put("startPayment/held", (t, e, c) -> c.pathParams.put("id", t.order("SKU-1", 2)));
    s.put("extendOrder/byDuration", (t, e, c) -> c.pathParams.put("id", t.order("SKU-1", 2)));
    s.put("extendOrder/toTime", (t, e, c) -> {
      String id = t.order("SKU-1", 2);
      Instant createdAt = Instant.parse(t.api.order(id).json().getString("createdAt"));
      c.pathParams.put("id", id);
      c.body = new JsonObject().put("closeAt", createdAt.plusSeconds(3600).toString()).encode();
    });
    s.put("extendOrder/beyondCeiling", (t, e, c) -> {
      c.pathParams.put("id", t.order("SKU-1", 2));
      c.body = "{\"extendSeconds\":604800}";
    });
    s.put("extendOrder/paid", (t, e, c) -> {
      String id = t.order("SKU-1", 2);
      assertThat(t.api.pay(id).status()).isEqualTo(200);
      c.pathParams.put("id", id);
      c.body = "{\"extendSeconds\":60}";
    });
    s.put("extendOrder/noSuchOrder", (t, e, c) -> {
      c.pathParams.put("id", "12345");
      c.body = "{\"extendSeconds\":60}";
    });
    s.put("extendOrder/notANumber", (t, e, c) -> {
      c.pathParams.put("id", "abc");
      c.body = "{\"extendSeconds\":60}";
    });
    s.put("closeOrder/closedByAdmin", (t, e, c) -> c.pathParams.put("id", t.order("SKU-1", 2)));
    s.put("getOrderLog/createdThenCancelled", (t, e, c) -> {
      String id = t.order("SKU-1", 2);
      assertThat(t.api.cancel(id).status()).isEqualTo(200);
      c.pathParams.put("id", id);
    });

    s.put("getInventory/stock", (t, e, c) -> t.order("SKU-1", 2));
    s.put("getInventory/unknownSku", (t, e, c) -> c.pathParams.put("sku", "NO-SUCH-SKU"));
    s.put("setInventory/set", (t, e, c) -> {});
    s.put("setInventory/conditional", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      c.headers.put("If-Match", t.api.get("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY).etag());
    });
    s.put("setInventory/negative", (t, e, c) -> c.body = "{\"available\":-1}");
    s.put("setInventory/unknownField", (t, e, c) -> c.body = "{\"available\":5,\"reserved\":0}");
    s.put("setInventory/staleVersion", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      c.headers.put("If-Match", t.api.get("/v1/admin/inventory/SKU-1", Api.ADMIN_KEY).etag());
      t.order("SKU-1", 2);
      c.body = "{\"available\":5}";
    });
    s.put("setInventory/noIfMatch", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      c.body = "{\"available\":5}";
    });
    for (String name : List.of("restock", "correction")) {
      s.put("adjustInventory/" + name, (t, e, c) -> {
        t.api.setStock("SKU-1", 100);
        c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
      });
    }
    s.put("adjustInventory/belowZero", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
      c.body = "{\"delta\":-101}";
    });
    s.put("adjustInventory/deltaZero", (t, e, c) -> {
      c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
      c.body = "{\"delta\":0}";
    });
    s.put("adjustInventory/missingIdempotencyKey", (t, e, c) -> c.body = "{\"delta\":5}");
    s.put("adjustInventory/keyReused", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      String key = UUID.randomUUID().toString();
      assertThat(t.api.adjustStock("SKU-1", 1, key).status()).isEqualTo(200);
      c.headers.put("Idempotency-Key", key);
      c.body = "{\"delta\":2}";
    });
    s.put("adjustInventory/unknownSku", (t, e, c) -> {
      c.pathParams.put("sku", "NO-SUCH-SKU");
      c.headers.put("Idempotency-Key", UUID.randomUUID().toString());
      c.body = "{\"delta\":5}";
    });
    s.put("getInventoryLog/createdThenCorrected", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      assertThat(t.api.adjustStock("SKU-1", -3, UUID.randomUUID().toString()).status()).isEqualTo(200);
    });
    s.put("getInventoryLog/limitTooLarge", (t, e, c) -> c.query = "?limit=500");
    s.put("getInventoryLog/unknownSku", (t, e, c) -> c.pathParams.put("sku", "NO-SUCH-SKU"));
    s.put("getStats/stats", (t, e, c) -> t.order("SKU-1", 2));

    s.put("reconcile/repair", (t, e, c) -> t.api.setStock("SKU-1", 100));
    s.put("reconcile/repairNotBoolean", (t, e, c) -> c.body = "{\"repair\":\"yes\"}");
    s.put("reconcile/checkOnly", (t, e, c) -> {
      t.order("SKU-1", 2);
      Sql.execute("UPDATE inventory SET reserved = 7 WHERE sku = 'SKU-1'");
      Sql.execute("UPDATE client_holdings SET unpaid = unpaid + 1, units = units + 1 WHERE client = 'dev-user' AND stripe > 16");
      c.cleanup = () -> {
        Sql.execute("UPDATE inventory SET reserved = 2 WHERE sku = 'SKU-1'");
        Sql.execute("UPDATE client_holdings SET unpaid = unpaid - 1, units = units - 1 WHERE client = 'dev-user' AND stripe > 16");
      };
    });
    s.put("listParkedOrders/parked", (t, e, c) -> t.park(t.order("SKU-1", 2)));
    s.put("listParkedOrders/limitTooLarge", (t, e, c) -> c.query = "?limit=500");
    s.put("retryParkedOrder/retried", (t, e, c) -> {
      String id = t.order("SKU-1", 2);
      t.park(id);
      Sql.execute("UPDATE orders SET close_at = now() - interval '1 second' WHERE id = ?", Long.parseLong(id));
      c.pathParams.put("id", id);
    });
    s.put("retryParkedOrder/notParked", (t, e, c) -> c.pathParams.put("id", t.order("SKU-1", 2)));
    s.put("getLatestReconciliation/latest", (t, e, c) -> {
      t.api.setStock("SKU-1", 100);
      assertThat(t.api.post("/v1/admin/reconcile", Api.ADMIN_KEY).status()).isEqualTo(200);
    });
    s.put("getLatestReconciliation/noRunYet", (t, e, c) -> {});
    s.put("listCloses/latest", (t, e, c) -> {
      String id = t.order("SKU-1", 2);
      assertThat(t.api.cancel(id).status()).isEqualTo(200);
      c.query = "?limit=" + t.parameterExample("listCloses", "limit", "ten");
    });
    s.put("listCloses/limitTooLarge", (t, e, c) -> c.query = "?limit=500");

    s.put("bulkClose/dryRun", (t, e, c) -> t.order("SKU-1", 2));
    s.put("bulkClose/byFilter", (t, e, c) -> t.order("SKU-1", 2));
    s.put("bulkExtend/dryRun", (t, e, c) -> c.body = new JsonObject().put("ids", new JsonArray().add(t.order("SKU-1", 2)))
        .put("extendSeconds", 600).put("dryRun", true).encode());

    s.put("live/up", (t, e, c) -> {});
    s.put("ready/ready", (t, e, c) -> {});
    s.put("metrics/excerpt", (t, e, c) -> {});
    return s;
  }

  /** Parks the order as ten failed closes would have, with the error of the document's example. */
  private void park(String id) {
    Sql.execute("INSERT INTO close_failures (order_id, failures, first_failed_at, last_failed_at, last_error, parked_at) "
        + "VALUES (?, 10, now(), now(), 'io.vertx.pgclient.PgException: ERROR: injected failure while releasing stock (P0001)', now())",
        Long.parseLong(id));
  }

  /** An order of u-1 for {@code qty} of {@code sku} (100 in stock), physical; its id. */
  private String order(String sku, int qty) {
    api.setStock(sku, 100);
    Api.Response response = api.createOrder(UUID.randomUUID().toString(),
        new JsonObject().put("userId", "u-1").put("items", new JsonArray().add(new JsonObject().put("sku", sku).put("qty", qty))));
    assertThat(response.status()).as(response.body()).isEqualTo(201);
    return response.json().getString("id");
  }

  private static Object requestExample(JsonObject operation, String name) {
    JsonObject requestBody = operation.getJsonObject("requestBody");
    if (requestBody == null) {
      return null;
    }
    JsonObject example = requestBody.getJsonObject("content").getJsonObject("application/json")
        .getJsonObject("examples", new JsonObject()).getJsonObject(name);
    return example == null ? null : strip(example.getValue("value"));
  }

  /** A value of the resolved document without the annotations vertx-openapi adds ({@code __absolute_uri__}, ...). */
  private static Object strip(Object value) {
    if (value instanceof JsonObject object) {
      JsonObject copy = new JsonObject();
      object.forEach(field -> {
        if (!field.getKey().startsWith("__")) {
          copy.put(field.getKey(), strip(field.getValue()));
        }
      });
      return copy;
    }
    if (value instanceof JsonArray array) {
      JsonArray copy = new JsonArray();
      array.forEach(item -> copy.add(strip(item)));
      return copy;
    }
    return value;
  }

  private Object parameterExample(String operationId, String parameter, String name) {
    for (Object p : operations(resolved).get(operationId).getJsonArray("parameters")) {
      JsonObject model = (JsonObject) p;
      if (model.getString("name").equals(parameter)) {
        return strip(model.getJsonObject("examples").getJsonObject(name).getValue("value"));
      }
    }
    throw new AssertionError("no parameter " + parameter + " in " + operationId);
  }

  private Api.Response send(Example example, Call call) {
    String path = example.path();
    for (Map.Entry<String, String> param : call.pathParams.entrySet()) {
      path = path.replace("{" + param.getKey() + "}", param.getValue());
    }
    path = path.replace("{id}", "1").replace("{sku}", "SKU-1");
    HttpRequest.Builder request = api.request(example.method().toUpperCase(), path + call.query, call.key, call.body);
    call.headers.forEach(request::header);
    return api.send(request);
  }

  // ---- checks

  /** The status is one the operation lists, the media type its, the body valid against its schema. */
  private void assertDocumented(String operationId, JsonObject operation, Api.Response response) {
    JsonObject responses = operation.getJsonObject("responses");
    JsonObject documented = responses.getJsonObject(Integer.toString(response.status()), responses.getJsonObject("default"));
    assertThat(documented).as("%s documents the status %d (%s)", operationId, response.status(), response.body()).isNotNull();
    JsonObject content = documented.getJsonObject("content", new JsonObject());
    String mediaType = content.fieldNames().stream().filter(type -> response.contentType().startsWith(type)).findFirst().orElse(null);
    assertThat(mediaType).as("%s %d documents the media type %s", operationId, response.status(), response.contentType()).isNotNull();
    for (Map.Entry<String, Object> header : documented.getJsonObject("headers", new JsonObject())) {
      if (header.getValue() instanceof JsonObject model && model.getBoolean("required", false)) {
        assertThat(response.raw().headers().firstValue(header.getKey())).as(operationId + " header " + header.getKey()).isPresent();
      }
    }
    Object body = mediaType.contains("json") ? Json.decodeValue(response.body()) : response.body();
    assertValid(content.getJsonObject(mediaType).getJsonObject("schema"), body, operationId + " " + response.status() + " " + response.body());
  }

  private void assertValid(JsonObject schema, Object value, String what) {
    OutputUnit result = schemas.validator(JsonSchema.of(schema)).validate(value);
    if (!result.getValid()) {
      fail(what + " does not match its schema: " + result.getErrors());
    }
  }

  /**
   * The answer matches the example: the same JSON types and nulls everywhere, the same fields in every
   * object, arrays of objects of the same length, and the same values but for ids and times (or, for
   * counters, for any number).
   */
  private static void assertMatches(Object expected, Object actual, String at, boolean shapeOnly) {
    if (expected == null || actual == null) {
      assertThat(actual).as("null at '%s'", at).isEqualTo(expected);
      return;
    }
    if (expected instanceof JsonObject object) {
      assertThat(actual).as("an object at '%s'", at).isInstanceOf(JsonObject.class);
      JsonObject other = (JsonObject) actual;
      assertThat(other.fieldNames()).as("the fields at '%s'", at).containsExactlyInAnyOrderElementsOf(object.fieldNames());
      for (String field : object.fieldNames()) {
        assertMatches(object.getValue(field), other.getValue(field), at + "/" + field, shapeOnly || VOLATILE.contains(field));
      }
    } else if (expected instanceof JsonArray array) {
      assertThat(actual).as("an array at '%s'", at).isInstanceOf(JsonArray.class);
      JsonArray other = (JsonArray) actual;
      boolean ofScalars = !array.isEmpty() && !(array.getValue(0) instanceof JsonObject) && shapeOnly;
      if (!ofScalars) {
        assertThat(other.size()).as("the length of the array at '%s': %s", at, other).isEqualTo(array.size());
      }
      for (int i = 0; i < Math.min(array.size(), other.size()); i++) {
        assertMatches(array.getValue(i), other.getValue(i), at + "/" + i, shapeOnly);
      }
    } else if (expected instanceof Number number) {
      assertThat(actual).as("a number at '%s'", at).isInstanceOf(Number.class);
      if (!shapeOnly) {
        assertThat(((Number) actual).doubleValue()).as("the value at '%s'", at).isEqualTo(number.doubleValue());
      }
    } else {
      assertThat(actual).as("the type at '%s'", at).isInstanceOf(expected.getClass());
      if (!shapeOnly) {
        assertThat(actual).as("the value at '%s'", at).isEqualTo(expected);
      }
    }
  }

  // ---- the document

  /** Every response example of every operation, in document order. */
  static List<Example> examples() {
    List<Example> examples = new ArrayList<>();
    JsonObject paths = SOURCE.getJsonObject("paths");
    for (String path : paths.fieldNames()) {
      JsonObject item = paths.getJsonObject(path);
      for (String method : item.fieldNames()) {
        if (!METHODS.contains(method)) {
          continue;
        }
        JsonObject operation = item.getJsonObject(method);
        JsonObject responses = operation.getJsonObject("responses");
        for (String status : responses.fieldNames()) {
          JsonObject response = (JsonObject) local(responses.getJsonObject(status));
          JsonObject content = response.getJsonObject("content", new JsonObject());
          for (String mediaType : content.fieldNames()) {
            JsonObject examplesOf = content.getJsonObject(mediaType).getJsonObject("examples", new JsonObject());
            for (String name : examplesOf.fieldNames()) {
              examples.add(new Example(operation.getString("operationId"), method, path, Integer.parseInt(status), mediaType, name,
                  examplesOf.getJsonObject(name).getValue("value")));
            }
          }
        }
      }
    }
    return examples;
  }

  /** The operations of the resolved document by operationId, with the path's parameters merged in. */
  private static Map<String, JsonObject> operations(JsonObject document) {
    Map<String, JsonObject> operations = new LinkedHashMap<>();
    JsonObject paths = document.getJsonObject("paths");
    for (String path : paths.fieldNames()) {
      if (!(paths.getValue(path) instanceof JsonObject item)) {
        continue;
      }
      for (String method : item.fieldNames()) {
        if (METHODS.contains(method)) {
          JsonObject operation = item.getJsonObject(method).copy();
          JsonArray parameters = new JsonArray();
          item.getJsonArray("parameters", new JsonArray()).forEach(parameters::add);
          operation.getJsonArray("parameters", new JsonArray()).forEach(parameters::add);
          operations.put(operation.getString("operationId"), operation.put("parameters", parameters).put("x-path", path)
              .put("x-method", method));
        }
      }
    }
    return operations;
  }

  private Map.Entry<String, JsonObject> operationFor(String method, String pathAndQuery) {
    String path = pathAndQuery.replaceFirst("\\?.*", "");
    for (Map.Entry<String, JsonObject> operation : operations(resolved).entrySet()) {
      String template = operation.getValue().getString("x-path");
      Pattern pattern = Pattern.compile(template.replaceAll("\\{[^}]+}", "[^/]+"));
      if (operation.getValue().getString("x-method").equalsIgnoreCase(method) && pattern.matcher(path).matches()) {
        return operation;
      }
    }
    return null;
  }

  /** A {@code $ref} to a component, followed in the source file. */
  private static Object local(JsonObject node) {
    String ref = node.getString("$ref");
    if (ref == null) {
      return node;
    }
    Object target = SOURCE;
    for (String segment : ref.substring(2).split("/")) {
      target = ((JsonObject) target).getValue(segment);
    }
    return target;
  }

  private static JsonObject readSource() {
    try (InputStream in = OpenApiContractTest.class.getClassLoader().getResourceAsStream("openapi.yaml")) {
      assertThat(in).as("openapi.yaml on the class path").isNotNull();
      return yaml(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static JsonObject yaml(String text) {
    return new JsonObject(Json.encode(plain(new Yaml(new SafeConstructor(new LoaderOptions())).load(text))));
  }

  private static Object plain(Object value) {
    if (value instanceof Map<?, ?> map) {
      Map<String, Object> copy = new LinkedHashMap<>();
      map.forEach((key, item) -> copy.put(String.valueOf(key), plain(item)));
      return copy;
    }
    if (value instanceof List<?> list) {
      return list.stream().map(OpenApiContractTest::plain).toList();
    }
    return value instanceof Date date ? date.toInstant().toString() : value;
  }

  private static <T> T await(Future<T> future) {
    return TestService.await(future);
  }
}
