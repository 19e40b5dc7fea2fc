package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.Cookie;
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

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Checks every /v1 request against its operation in the API document before the route's handler runs, so
 * that handlers only map validated input to domain types. A failure answers 400 with the code
 * {@link ProblemCodes} reads from the document. The body is decoded once, here ({@link StrictJson}); handlers read
 * it with {@link #body(RoutingContext)} and parameters with {@link #parameter(RoutingContext, String)}.
 *
 * <p>The checks run on the event loop with JSON Schema validators built once per parameter and body from
 * vertx-openapi's model of the document, each behind a {@link SchemaPrecheck} that accepts ordinary
 * requests in about 1 µs (the validator takes about 40 µs); only what the precheck does not accept
 * reaches the validator. Not through {@code RequestValidator}: it hops to a worker thread for every
 * request, URL-decodes header values (an Idempotency-Key {@code a+b} would become {@code a b}) and reads
 * string parameters as JSON when they look like it (a SKU {@code 1.5} would become a number).
 */
public final class ContractChecks {
  private static final String BODY = "ordertimeout.body";
  private static final String PARAMETER = "ordertimeout.parameter.";
  private static final String JSON = "application/json";
  private static final Pattern DIGITS = Pattern.compile("[0-9]{1,18}");

  private final ApiDocument document;
  private final Map<String, Check> checks;

  private ContractChecks(ApiDocument document, Map<String, Check> checks) {
    this.document = document;
    this.checks = checks;
  }

  /** Reads the document off the event loop and builds the checks (vertx-openapi checks it against the OpenAPI 3.1 schema). */
  public static Future<ContractChecks> load(Vertx vertx, AppConfig config) {
    return vertx.executeBlocking(() -> ApiDocument.read(config))
        .compose(document -> OpenAPIContract.from(vertx, document.requestsOnly())
            .map(contract -> new ContractChecks(document, checks(contract, document.json()))));
  }

  ApiDocument document() {
    return document;
  }

  /** The check of one operation, for its route; fails with {@link ApiException} 400. */
  public Handler<RoutingContext> validate(String operationId) {
    Check check = checks.get(operationId);
    if (check == null) {
      throw new IllegalArgumentException("no operation " + operationId + " in " + ApiDocument.RESOURCE);
    }
    return check;
  }

  /** The request body as JSON, decoded by the check; null when the request had none. */
  static Object body(RoutingContext ctx) {
    return ctx.get(BODY);
  }

  /**
   * A parameter's value as the check accepted it (integers as {@link Long}), or its schema's default when the
   * request left it out (null when there is none).
   */
  static Object parameter(RoutingContext ctx, String name) {
    return ctx.get(PARAMETER + name);
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

  /** {@code precheck}: null where the schema uses keywords it does not know. */
  private record ParameterCheck(Parameter parameter, SchemaPrecheck precheck, Validator validator, String invalidCode,
      String missingCode, Object byDefault) {}

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

  private static Map<String, Check> checks(OpenAPIContract contract, JsonObject document) {
    Map<String, Check> checks = new LinkedHashMap<>();
    for (Operation operation : contract.operations()) {
      List<ParameterCheck> parameters = new ArrayList<>();
      for (Parameter parameter : operation.getParameters()) {
        JsonObject model = (JsonObject) ApiDocument.resolve(document, parameter.getOpenAPIModel());
        String invalid = model.getString("x-problem-code", ProblemCodes.INVALID_FIELD);
        Object schema = ApiDocument.resolve(document, model.getValue("schema"));
        Object byDefault = schema instanceof JsonObject object ? object.getValue("default") : null;
        parameters.add(new ParameterCheck(parameter, SchemaPrecheck.of(document, schema),
            contract.getSchemaRepository().validator(parameter.getSchema()), invalid, model.getString("x-missing-problem-code", invalid),
            byDefault));
      }
      RequestBody requestBody = operation.getRequestBody();
      BodyCheck body = null;
      if (requestBody != null) {
        Object schema = requestBody.getOpenAPIModel().getJsonObject("content").getJsonObject(JSON).getValue("schema");
        body = new BodyCheck(requestBody.isRequired(), SchemaPrecheck.of(document, schema),
            contract.getSchemaRepository().validator(requestBody.getContent().get(JSON).getSchema()),
            document, (JsonObject) ApiDocument.resolve(document, documentedBodySchema(document, operation)));
      }
      checks.put(operation.getOperationId(), new Check(List.copyOf(parameters), body));
    }
    return checks;
  }

  /**
   * The body's schema as the document writes it, not as vertx-openapi's model of it: there each {@code $ref} is
   * replaced by the schema it names, and what stands beside it (a property's {@code x-problem-codes}) is lost.
   */
  private static Object documentedBodySchema(JsonObject document, Operation operation) {
    return document.getJsonObject("paths").getJsonObject(operation.getOpenAPIPath())
        .getJsonObject(operation.getHttpMethod().name().toLowerCase(Locale.ROOT)).getJsonObject("requestBody")
        .getJsonObject("content").getJsonObject(JSON).getValue("schema");
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
      ctx.put(PARAMETER + parameter.getName(), check.byDefault());
      return;
    }
    if (parameter.getSchemaType() == SchemaType.INTEGER && value instanceof String text && DIGITS.matcher(text).matches()) {
      value = Long.parseLong(text);
    }
    if (check.precheck() == null || !check.precheck().accepts(value)) {
      OutputUnit result = check.validator().validate(value);
      if (!result.getValid()) {
        List<OutputUnit> errors = ProblemCodes.leaves(result, null, null);
        throw ApiException.badRequest(check.invalidCode(), "the " + where(parameter) + " is invalid: "
            + (errors.isEmpty() ? "it does not match its schema" : errors.get(0).getError()));
      }
    }
    ctx.put(PARAMETER + parameter.getName(), value);
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
        throw ApiException.badRequest(ProblemCodes.MALFORMED_JSON, "the request body must be a JSON object");
      }
      return null;
    }
    Object json = StrictJson.decode(raw);
    if (check.precheck() != null && check.precheck().accepts(json)) {
      return json;
    }
    OutputUnit result = check.validator().validate(json);
    if (!result.getValid()) {
      throw ProblemCodes.ofBody(result, check.document(), check.schema());
    }
    return json;
  }
}
