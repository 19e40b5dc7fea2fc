package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.json.schema.OutputUnit;

import java.util.ArrayList;
import java.util.List;

/**
 * The problem codes the service answers besides those of each domain refusal. Which stable code a request that failed
 * its check answers, read from the document: {@code malformed_json} (no body; not JSON, or with a comment or a
 * member twice in one object: {@link StrictJson}; not an object), {@code unknown_field}
 * ({@code additionalProperties}), a schema keyword's {@code x-problem-codes} (on its schema, or beside a {@code $ref}
 * to it), else {@code invalid_field}. A parameter answers its own {@code x-problem-code} (or
 * {@code x-missing-problem-code} when it is absent), which {@link ContractChecks} reads with the parameter.
 */
final class ProblemCodes {
  static final String MALFORMED_JSON = "malformed_json";
  static final String UNKNOWN_FIELD = "unknown_field";
  static final String INVALID_FIELD = "invalid_field";
  /** 400: a list's cursor that is not one it handed out. */
  static final String INVALID_CURSOR = "invalid_cursor";
  /** 503: the request was not started (queue full, deadline passed, no room to wait for a connection); nothing stored. */
  static final String OVERLOADED = "overloaded";
  /** 503: a row the request needs stayed locked by another transaction past the lock wait; nothing stored. */
  static final String ROW_LOCKED = "row_locked";
  /** 503: a create refused because its client's rate limit, in Redis, cannot be read (redis.whenUnreachable=deny). */
  static final String RATE_LIMITER_UNAVAILABLE = "rate_limiter_unavailable";
  /** 504: a request that changes something was not decided within the answer deadline; it may still take effect. */
  static final String OUTCOME_UNKNOWN = "outcome_unknown";
  /** 504: a read was not answered within the answer deadline. */
  static final String READ_TIMEOUT = "read_timeout";

  private ProblemCodes() {}

  /** The failure of a body against its {@code schema} in {@code document}. */
  static ApiException ofBody(OutputUnit result, JsonObject document, JsonObject schema) {
    // the error that decides the code: the body's own type first, then an unknown field, then the first
    List<OutputUnit> errors = leaves(result, document, schema);
    for (OutputUnit error : errors) {
      if (ApiDocument.pointer(error.getInstanceLocation()).isEmpty() && "type".equals(keyword(error))) {
        return ApiException.badRequest(MALFORMED_JSON, "the request body must be a JSON object");
      }
    }
    for (OutputUnit error : errors) {
      if ("additionalProperties".equals(keyword(error))) {
        return ApiException.badRequest(UNKNOWN_FIELD, "unknown field '" + field(error.getInstanceLocation()) + "'");
      }
    }
    if (errors.isEmpty()) {
      return ApiException.badRequest(INVALID_FIELD, "the request body does not match its schema");
    }
    OutputUnit first = errors.get(0);
    String field = field(first.getInstanceLocation());
    return ApiException.badRequest(problemCode(document, schema, first), (field.isEmpty() ? "" : "'" + field + "': ") + first.getError());
  }

  /**
   * The errors that name a failed keyword of their own, not a subschema that failed. vertx-json-schema
   * also reports a known property whose value failed as not matching {@code additionalProperties}:
   * such errors are dropped, so that only a property the schema does not list counts as unknown.
   */
  static List<OutputUnit> leaves(OutputUnit result, JsonObject document, JsonObject schema) {
    List<OutputUnit> leaves = new ArrayList<>();
    for (OutputUnit error : result.getErrors() == null ? List.<OutputUnit>of() : result.getErrors()) {
      String keyword = keyword(error);
      if (isComposite(keyword) || "additionalProperties".equals(keyword) && schema != null && isKnownProperty(document, schema, error)) {
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

  private static boolean isKnownProperty(JsonObject document, JsonObject schema, OutputUnit error) {
    List<String> instance = ApiDocument.pointer(error.getInstanceLocation());
    Object holder = holders(document, schema, error).get(0);
    return !instance.isEmpty() && holder instanceof JsonObject holding && holding.getValue("properties") instanceof JsonObject properties
        && properties.containsKey(instance.get(instance.size() - 1));
  }

  /** The schema keyword of an error: the last segment of its keyword location. */
  private static String keyword(OutputUnit error) {
    String location = error.getKeywordLocation();
    return location == null ? "" : location.substring(location.lastIndexOf('/') + 1);
  }

  /**
   * The schema that holds the failed keyword, then the schemas that lead to it by {@code $ref}, nearest first (a
   * property {@code {$ref: ..., x-problem-codes: ...}} of a shared schema): the error's keyword location walked from
   * the body's schema, following each {@code $ref} on the way (the absolute locations are not reliable for the root
   * schema).
   */
  private static List<Object> holders(JsonObject document, JsonObject schema, OutputUnit error) {
    List<String> path = ApiDocument.pointer(error.getKeywordLocation());
    Object node = schema;
    List<Object> referrers = new ArrayList<>();
    for (int i = 0; i < path.size() - 1 && node != null; i++) {
      String segment = path.get(i);
      if ("$ref".equals(segment)) {
        referrers.add(0, node);
        node = ApiDocument.resolve(document, node);
        continue;
      }
      referrers.clear();
      if (node instanceof JsonObject object) {
        node = object.getValue(segment);
      } else if (node instanceof JsonArray array && segment.matches("[0-9]+") && Integer.parseInt(segment) < array.size()) {
        node = array.getValue(Integer.parseInt(segment));
      } else {
        node = null;
      }
    }
    Object holder = ApiDocument.resolve(document, node);
    if (holder != node) {
      referrers.add(0, node);
    }
    List<Object> holders = new ArrayList<>();
    holders.add(holder);
    holders.addAll(referrers);
    return holders;
  }

  /**
   * {@code x-problem-codes: {keyword: code}} on the schema that holds the failed keyword, else on the nearest schema
   * that refers to it; else invalid_field.
   */
  private static String problemCode(JsonObject document, JsonObject schema, OutputUnit error) {
    for (Object holder : holders(document, schema, error)) {
      if (holder instanceof JsonObject holding && holding.getValue("x-problem-codes") instanceof JsonObject codes) {
        String code = codes.getString(keyword(error));
        if (code != null) {
          return code;
        }
      }
    }
    return INVALID_FIELD;
  }

  /** "#/items/0/qty" → "items[0].qty", as the service's messages name fields. */
  static String field(String instanceLocation) {
    StringBuilder field = new StringBuilder();
    for (String segment : ApiDocument.pointer(instanceLocation)) {
      if (segment.matches("[0-9]+")) {
        field.append('[').append(segment).append(']');
      } else {
        field.append(field.length() == 0 ? "" : ".").append(segment);
      }
    }
    return field.toString();
  }
}
