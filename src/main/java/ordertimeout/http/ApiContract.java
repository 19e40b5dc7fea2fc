package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.Cookie;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.json.schema.OutputUnit;
import io.vertx.json.schema.Validator;
import io.vertx.json.schema.common.dsl.SchemaType;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.contract.Parameter;
import io.vertx.openapi.contract.RequestBody;
import ordertimeout.config.AppConfig;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.representer.Representer;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The API contract, {@code openapi.yaml}: read once per node (off the event loop) with this node's
 * configured limits written into the schemas marked {@code x-config}, served at GET /openapi.yaml, and
 * used to check every /v1 request against its operation before the route's handler runs.
 *
 * <p>The checks run on the event loop with JSON Schema validators built once per parameter and
 * body from vertx-openapi's model of the contract, each behind a {@link SchemaPrecheck} that accepts
 * ordinary requests in about 1 µs (the validator takes about 40 µs); only what the precheck does not
 * accept reaches the validator. Not through {@code RequestValidator}: it hops to a
 * worker thread for every request, URL-decodes header values (an Idempotency-Key {@code a+b} would
 * become {@code a b}) and reads string parameters as JSON when they look like it (a SKU {@code 1.5}
 * would become a number). A failure answers 400 with the stable code the service has always used for
 * it: {@code malformed_json} (no body, not JSON, not an object), {@code unknown_field}
 * ({@code additionalProperties}), a parameter's {@code x-problem-code} (or {@code x-missing-problem-code}
 * when it is absent), a schema keyword's {@code x-problem-codes}, else {@code invalid_field}. The body is
 * decoded once, here; handlers read it with {@link #body(RoutingContext)}.
 */
public final class ApiContract {
  public static final String RESOURCE = "openapi.yaml";
  private static final String BODY = "ordertimeout.body";
  private static final String JSON = "application/json";
  private static final Pattern DIGITS = Pattern.compile("[0-9]{1,18}");

  private final Buffer served;
  private final Map<String, Check> checks;

  private ApiContract(Buffer served, Map<String, Check> checks) {
    this.served = served;
    this.checks = checks;
  }

  /** Reads, fills in and validates the contract (vertx-openapi checks it against the OpenAPI 3.1 schema). */
  public static Future<ApiContract> load(Vertx vertx, AppConfig config) {
    return vertx.executeBlocking(() -> {
      Map<String, Object> document = withConfig(readYaml(), config);
      return new Loaded(Buffer.buffer(dumpYaml(document), "UTF-8"), toJson(document));
    }).compose(loaded -> OpenAPIContract.from(vertx, requestsOnly(loaded.json()))
        .map(contract -> new ApiContract(loaded.served(), checks(contract, loaded.json()))));
  }

  private record Loaded(Buffer served, JsonObject json) {}

  /** Serves the document: the source file with this node's limits. */
  public void serve(RoutingContext ctx) {
    ctx.response().putHeader("Content-Type", "application/yaml; charset=utf-8").end(served);
  }

  /** The check of one operation, for its route; fails with {@link ApiException} 400. */
  public Handler<RoutingContext> validate(String operationId) {
    Check check = checks.get(operationId);
    if (check == null) {
      throw new IllegalArgumentException("no operation " + operationId + " in " + RESOURCE);
    }
    return check;
  }

  /** What a body's or a parameter's precheck (null where there is none) and its validator say of a value. */
  record Verdicts(Boolean precheckAccepts, boolean valid) {}

  /** For tests that hold the prechecks to the validators: {@code part} is "body" or a parameter's name. */
  Verdicts verdicts(String operationId, String part, Object value) {
    Check check = checks.get(operationId);
    if ("body".equals(part)) {
      SchemaPrecheck precheck = check.body().precheck();
      return new Verdicts(precheck == null ? null : precheck.accepts(value), check.body().validator().validate(value).getValid());
    }
    ParameterCheck parameter = check.parameters().stream()
        .filter(candidate -> candidate.parameter().getName().equals(part)).findFirst().orElseThrow();
    SchemaPrecheck precheck = parameter.precheck();
    return new Verdicts(precheck == null ? null : precheck.accepts(value), parameter.validator().validate(value).getValid());
  }

  /** The request body as JSON, decoded by the check; null when the request had none. */
  static Object body(RoutingContext ctx) {
    return ctx.get(BODY);
  }

  // ---- loading

  private static Map<String, Object> readYaml() {
    try (InputStream in = ApiContract.class.getClassLoader().getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is not on the class path");
      }
      Object loaded = new Yaml(new SafeConstructor(new LoaderOptions())).load(in);
      @SuppressWarnings("unchecked")
      Map<String, Object> document = (Map<String, Object>) plain(loaded);
      return document;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Maps and lists with string keys and no timestamps (a YAML date stays the text it was). */
  private static Object plain(Object value) {
    if (value instanceof Map<?, ?> map) {
      Map<String, Object> copy = new LinkedHashMap<>();
      map.forEach((key, item) -> copy.put(String.valueOf(key), plain(item)));
      return copy;
    }
    if (value instanceof List<?> list) {
      List<Object> copy = new ArrayList<>(list.size());
      list.forEach(item -> copy.add(plain(item)));
      return copy;
    }
    if (value instanceof Date date) {
      return date.toInstant().toString();
    }
    return value;
  }

  /** Every {@code x-config: {keyword: config.key}} sets {@code keyword} beside it to this node's value. */
  static Map<String, Object> withConfig(Map<String, Object> document, AppConfig config) {
    AppConfig.Orders orders = config.orders();
    Map<String, Object> values = Map.of(
        "orders.maxItems", orders.maxItems(),
        "orders.maxQty", orders.maxQty(),
        "orders.minTimeoutSeconds", orders.minTimeoutSeconds(),
        "orders.maxTimeoutSeconds", orders.maxTimeoutSeconds(),
        "orders.categories", orders.categoryTimeoutSeconds().keySet().stream().sorted().toList(),
        "orders.defaultCategory", orders.defaultCategory());
    fillIn(document, values);
    return document;
  }

  @SuppressWarnings("unchecked")
  private static void fillIn(Object node, Map<String, Object> values) {
    if (node instanceof Map<?, ?> map) {
      if (map.get("x-config") instanceof Map<?, ?> keywords) {
        keywords.forEach((keyword, key) -> {
          Object value = values.get(String.valueOf(key));
          if (value == null) {
            throw new IllegalStateException(RESOURCE + ": x-config names an unknown key " + key);
          }
          ((Map<String, Object>) map).put(String.valueOf(keyword), value);
        });
      }
      map.values().forEach(child -> fillIn(child, values));
    } else if (node instanceof List<?> list) {
      list.forEach(child -> fillIn(child, values));
    }
  }

  private static String dumpYaml(Map<String, Object> document) {
    DumperOptions options = new DumperOptions();
    options.setDefaultFlowStyle(DumperOptions.FlowStyle.BLOCK);
    options.setIndent(2);
    options.setWidth(120);
    options.setSplitLines(false);
    return new Yaml(new Representer(options), options).dump(document);
  }

  private static JsonObject toJson(Map<String, Object> document) {
    return new JsonObject(Json.encode(document));
  }

  /**
   * The document without its responses (but a bare default): the checks need the requests only, and
   * vertx-openapi 5.0 refuses response media types it cannot validate (application/problem+json,
   * application/yaml; eclipse-vertx/vertx-openapi#107).
   */
  private static JsonObject requestsOnly(JsonObject document) {
    JsonObject copy = document.copy();
    JsonObject paths = copy.getJsonObject("paths");
    for (String path : paths.fieldNames()) {
      JsonObject item = paths.getJsonObject(path);
      for (String method : item.fieldNames()) {
        if (item.getValue(method) instanceof JsonObject operation && operation.containsKey("operationId")) {
          operation.put("responses", new JsonObject().put("default", new JsonObject().put("description", "see " + RESOURCE)));
        }
      }
    }
    return copy;
  }

  private static Map<String, Check> checks(OpenAPIContract contract, JsonObject document) {
    Map<String, Check> checks = new LinkedHashMap<>();
    for (Operation operation : contract.operations()) {
      List<ParameterCheck> parameters = new ArrayList<>();
      for (Parameter parameter : operation.getParameters()) {
        JsonObject model = (JsonObject) resolve(document, parameter.getOpenAPIModel());
        String invalid = model.getString("x-problem-code", "invalid_field");
        parameters.add(new ParameterCheck(parameter, SchemaPrecheck.of(document, model.getValue("schema")),
            contract.getSchemaRepository().validator(parameter.getSchema()), invalid, model.getString("x-missing-problem-code", invalid)));
      }
      RequestBody requestBody = operation.getRequestBody();
      BodyCheck body = null;
      if (requestBody != null) {
        Object schema = requestBody.getOpenAPIModel().getJsonObject("content").getJsonObject(JSON).getValue("schema");
        body = new BodyCheck(requestBody.isRequired(), SchemaPrecheck.of(document, schema),
            contract.getSchemaRepository().validator(requestBody.getContent().get(JSON).getSchema()),
            document, (JsonObject) resolve(document, schema));
      }
      checks.put(operation.getOperationId(), new Check(List.copyOf(parameters), body));
    }
    return checks;
  }

  /** Follows a {@code $ref} into the document ({@code app:///#/components/...} as vertx-openapi writes them). */
  private static Object resolve(JsonObject document, Object node) {
    while (node instanceof JsonObject object && object.getValue("$ref") instanceof String ref) {
      node = at(document, ref);
    }
    return node;
  }

  /** The node at a JSON pointer or a {@code app:///#/...} location of the document; null if none. */
  static Object at(JsonObject document, String location) {
    Object node = document;
    for (String segment : pointer(location)) {
      if (node instanceof JsonObject object) {
        node = object.getValue(segment);
      } else if (node instanceof JsonArray array && segment.matches("[0-9]+") && Integer.parseInt(segment) < array.size()) {
        node = array.getValue(Integer.parseInt(segment));
      } else {
        return null;
      }
    }
    return node;
  }

  // ---- checking

  /** {@code precheck}: null where the schema uses keywords it does not know. */
  private record ParameterCheck(Parameter parameter, SchemaPrecheck precheck, Validator validator, String invalidCode,
      String missingCode) {}

  /** {@code schema}: the body's schema in {@code document}, where the errors' keyword locations start. */
  private record BodyCheck(boolean required, SchemaPrecheck precheck, Validator validator, JsonObject document,
      JsonObject schema) {}

  private record Check(List<ParameterCheck> parameters, BodyCheck body) implements Handler<RoutingContext> {
    @Override
    public void handle(RoutingContext ctx) {
      for (ParameterCheck check : parameters) {
        checkParameter(ctx, check);
      }
      if (body != null) {
        ctx.put(BODY, checkBody(ctx, body));
      }
      ctx.next();
    }
  }

  private static void checkParameter(RoutingContext ctx, ParameterCheck check) {
    Parameter parameter = check.parameter();
    Object value = switch (parameter.getIn()) {
      case HEADER -> ctx.request().getHeader(parameter.getName());
      case PATH -> ctx.pathParam(parameter.getName());
      case QUERY -> query(ctx.queryParam(parameter.getName()));
      case COOKIE -> {
        Cookie cookie = ctx.request().getCookie(parameter.getName());
        yield cookie == null ? null : cookie.getValue();
      }
    };
    if (value == null) {
      if (parameter.isRequired()) {
        throw ApiException.badRequest(check.missingCode(), "the " + where(parameter) + " is required");
      }
      return;
    }
    if (parameter.getSchemaType() == SchemaType.INTEGER && value instanceof String text && DIGITS.matcher(text).matches()) {
      value = Long.parseLong(text);
    }
    if (check.precheck() != null && check.precheck().accepts(value)) {
      return;
    }
    OutputUnit result = check.validator().validate(value);
    if (!result.getValid()) {
      List<OutputUnit> errors = leaves(result, null);
      throw ApiException.badRequest(check.invalidCode(), "the " + where(parameter) + " is invalid: "
          + (errors.isEmpty() ? "it does not match its schema" : errors.get(0).getError()));
    }
  }

  /** One value as itself, several as an array (which no parameter's schema takes). */
  private static Object query(List<String> values) {
    return values.isEmpty() ? null : values.size() == 1 ? values.get(0) : new JsonArray(new ArrayList<>(values));
  }

  private static String where(Parameter parameter) {
    return switch (parameter.getIn()) {
      case HEADER -> parameter.getName() + " header";
      case PATH -> "'" + parameter.getName() + "' in the path";
      case QUERY -> "query parameter '" + parameter.getName() + "'";
      case COOKIE -> "cookie " + parameter.getName();
    };
  }

  private static Object checkBody(RoutingContext ctx, BodyCheck check) {
    Buffer raw = ctx.body().buffer();
    if (raw == null || raw.length() == 0) {
      if (check.required()) {
        throw ApiException.badRequest("malformed_json", "the request body must be a JSON object");
      }
      return null;
    }
    Object json;
    try {
      json = Json.decodeValue(raw);
    } catch (DecodeException e) {
      throw ApiException.badRequest("malformed_json", "the request body is not valid JSON");
    }
    if (check.precheck() != null && check.precheck().accepts(json)) {
      return json;
    }
    OutputUnit result = check.validator().validate(json);
    if (!result.getValid()) {
      throw problem(leaves(result, check), check);
    }
    return json;
  }

  /** The error that decides the code: the body's own type first, then an unknown field, then the first. */
  private static ApiException problem(List<OutputUnit> errors, BodyCheck check) {
    for (OutputUnit error : errors) {
      if (pointer(error.getInstanceLocation()).isEmpty() && "type".equals(keyword(error))) {
        return ApiException.badRequest("malformed_json", "the request body must be a JSON object");
      }
    }
    for (OutputUnit error : errors) {
      if ("additionalProperties".equals(keyword(error))) {
        return ApiException.badRequest("unknown_field", "unknown field '" + field(error.getInstanceLocation()) + "'");
      }
    }
    if (errors.isEmpty()) {
      return ApiException.badRequest("invalid_field", "the request body does not match its schema");
    }
    OutputUnit first = errors.get(0);
    String field = field(first.getInstanceLocation());
    return ApiException.badRequest(problemCode(check, first), (field.isEmpty() ? "" : "'" + field + "': ") + first.getError());
  }

  /**
   * The errors that name a failed keyword of their own, not a subschema that failed. vertx-json-schema
   * also reports a known property whose value failed as not matching {@code additionalProperties}:
   * such errors are dropped, so that only a property the schema does not list counts as unknown.
   */
  private static List<OutputUnit> leaves(OutputUnit result, BodyCheck body) {
    List<OutputUnit> leaves = new ArrayList<>();
    for (OutputUnit error : result.getErrors() == null ? List.<OutputUnit>of() : result.getErrors()) {
      String keyword = keyword(error);
      if (isComposite(keyword) || "additionalProperties".equals(keyword) && body != null && isKnownProperty(body, error)) {
        continue;
      }
      leaves.add(error);
    }
    return leaves;
  }

  private static boolean isComposite(String keyword) {
    return switch (keyword) {
      case "properties", "items", "prefixItems", "allOf", "anyOf", "oneOf", "$ref", "additionalItems" -> true;
      default -> false;
    };
  }

  private static boolean isKnownProperty(BodyCheck body, OutputUnit error) {
    List<String> instance = pointer(error.getInstanceLocation());
    Object holder = holder(body, error);
    return !instance.isEmpty() && holder instanceof JsonObject schema && schema.getValue("properties") instanceof JsonObject properties
        && properties.containsKey(instance.get(instance.size() - 1));
  }

  /** The schema keyword of an error: the last segment of its keyword location. */
  private static String keyword(OutputUnit error) {
    String location = error.getKeywordLocation();
    return location == null ? "" : location.substring(location.lastIndexOf('/') + 1);
  }

  /**
   * The schema that holds the failed keyword: the error's keyword location walked from the body's schema,
   * following each {@code $ref} on the way (the absolute locations are not reliable for the root schema).
   */
  private static Object holder(BodyCheck body, OutputUnit error) {
    List<String> path = pointer(error.getKeywordLocation());
    Object node = body.schema();
    for (int i = 0; i < path.size() - 1 && node != null; i++) {
      String segment = path.get(i);
      if ("$ref".equals(segment)) {
        node = resolve(body.document(), node);
      } else if (node instanceof JsonObject object) {
        node = object.getValue(segment);
      } else if (node instanceof JsonArray array && segment.matches("[0-9]+") && Integer.parseInt(segment) < array.size()) {
        node = array.getValue(Integer.parseInt(segment));
      } else {
        node = null;
      }
    }
    return resolve(body.document(), node);
  }

  /** {@code x-problem-codes: {keyword: code}} on the schema that holds the failed keyword; else invalid_field. */
  private static String problemCode(BodyCheck body, OutputUnit error) {
    Object holder = holder(body, error);
    if (holder instanceof JsonObject schema && schema.getValue("x-problem-codes") instanceof JsonObject codes) {
      String code = codes.getString(keyword(error));
      if (code != null) {
        return code;
      }
    }
    return "invalid_field";
  }

  /** "#/items/0/qty" or "app:///#/components/schemas/X" → [items, 0, qty] or [components, schemas, X]. */
  private static List<String> pointer(String location) {
    List<String> segments = new ArrayList<>();
    if (location == null) {
      return segments;
    }
    int hash = location.indexOf('#');
    for (String segment : location.substring(hash + 1).split("/")) {
      if (!segment.isEmpty()) {
        segments.add(segment.replace("~1", "/").replace("~0", "~"));
      }
    }
    return segments;
  }

  /** "#/items/0/qty" → "items[0].qty", as the service's messages name fields. */
  private static String field(String instanceLocation) {
    StringBuilder field = new StringBuilder();
    for (String segment : pointer(instanceLocation)) {
      if (segment.matches("[0-9]+")) {
        field.append('[').append(segment).append(']');
      } else {
        field.append(field.length() == 0 ? "" : ".").append(segment);
      }
    }
    return field.toString();
  }
}
