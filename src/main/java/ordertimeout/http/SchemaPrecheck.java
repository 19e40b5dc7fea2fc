package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * A quick yes for the common case: whether a value certainly matches a JSON schema of the contract.
 * "No" means "ask the validator", which finds the error, or accepts after all: the precheck only
 * spares its cost. vertx-json-schema's validator took 30-40 µs of the event loop per create, 44% of the
 * service's CPU under load (JFR), much of it interpreted: its main method is too large for the JIT.
 *
 * <p>It knows the keywords the requests' schemas use ({@code type}, {@code properties},
 * {@code required}, {@code additionalProperties}, {@code items}, {@code minItems}, {@code maxItems},
 * {@code minimum}, {@code maximum}, {@code pattern}, {@code enum}, {@code $ref}) and annotations; a
 * schema with any other keyword gets no precheck. Where the two could differ it says no: integers
 * only as {@link Integer} or {@link Long} (not 2.0), bounds only as whole numbers, patterns only on
 * printable ASCII (no line terminators, where regular expression dialects disagree about {@code $}),
 * enums only of strings.
 */
final class SchemaPrecheck {
  /** And {@code __absolute_uri__}, which vertx-json-schema writes into the schemas it loads. */
  private static final Set<String> ANNOTATIONS = Set.of("description", "default", "example", "examples", "title",
      "$comment", "deprecated", "readOnly", "writeOnly", "__absolute_uri__");
  /** Deeper than any schema of the contract: a recursive one is left to the validator. */
  private static final int MAX_DEPTH = 16;
  private static final Predicate<Object> ANYTHING = value -> true;

  private final Predicate<Object> check;

  private SchemaPrecheck(Predicate<Object> check) {
    this.check = check;
  }

  /** The precheck of {@code schema} (its {@code $ref}s point into {@code document}); null if it uses other keywords. */
  static SchemaPrecheck of(JsonObject document, Object schema) {
    Predicate<Object> check = compile(document, schema, 0);
    return check == null ? null : new SchemaPrecheck(check);
  }

  /** True only if the value matches the schema. */
  boolean accepts(Object value) {
    return check.test(value);
  }

  private static Predicate<Object> compile(JsonObject document, Object node, int depth) {
    if (Boolean.TRUE.equals(node)) {
      return ANYTHING;
    }
    if (depth > MAX_DEPTH || !(node instanceof JsonObject schema)) {
      return null;
    }
    List<Predicate<Object>> checks = new ArrayList<>();
    for (String keyword : schema.fieldNames()) {
      Object argument = schema.getValue(keyword);
      Predicate<Object> check = switch (keyword) {
        case "$ref" -> argument instanceof String ref ? compile(document, ApiDocument.at(document, ref), depth + 1) : null;
        case "type" -> type(argument);
        case "properties" -> properties(document, argument, depth);
        case "required" -> required(argument);
        case "additionalProperties" -> additionalProperties(document, schema, argument, depth);
        case "items" -> items(document, argument, depth);
        case "minItems" -> size(argument, true);
        case "maxItems" -> size(argument, false);
        case "minimum" -> bound(argument, true);
        case "maximum" -> bound(argument, false);
        case "pattern" -> pattern(argument);
        case "enum" -> stringEnum(argument);
        default -> keyword.startsWith("x-") || ANNOTATIONS.contains(keyword) ? ANYTHING : null;
      };
      if (check == null) {
        return null;
      }
      if (check != ANYTHING) {
        checks.add(check);
      }
    }
    return allOf(checks);
  }

  private static Predicate<Object> allOf(List<Predicate<Object>> checks) {
    if (checks.isEmpty()) {
      return ANYTHING;
    }
    if (checks.size() == 1) {
      return checks.get(0);
    }
    @SuppressWarnings("unchecked")
    Predicate<Object>[] all = checks.toArray(Predicate[]::new);
    return value -> {
      for (Predicate<Object> check : all) {
        if (!check.test(value)) {
          return false;
        }
      }
      return true;
    };
  }

  private static Predicate<Object> type(Object argument) {
    List<Predicate<Object>> types = new ArrayList<>();
    for (Object name : argument instanceof JsonArray names ? names.getList() : List.of(argument)) {
      Predicate<Object> type = switch (String.valueOf(name)) {
        case "string" -> value -> value instanceof String;
        case "integer" -> SchemaPrecheck::isWholeNumber;
        case "boolean" -> value -> value instanceof Boolean;
        case "object" -> value -> value instanceof JsonObject;
        case "array" -> value -> value instanceof JsonArray;
        case "null" -> value -> value == null;
        default -> null; // "number" and anything else: left to the validator
      };
      if (type == null) {
        return null;
      }
      types.add(type);
    }
    if (types.size() == 1) {
      return types.get(0);
    }
    @SuppressWarnings("unchecked")
    Predicate<Object>[] any = types.toArray(Predicate[]::new);
    return value -> {
      for (Predicate<Object> type : any) {
        if (type.test(value)) {
          return true;
        }
      }
      return false;
    };
  }

  private static boolean isWholeNumber(Object value) {
    return value instanceof Integer || value instanceof Long;
  }

  private static Predicate<Object> properties(JsonObject document, Object argument, int depth) {
    if (!(argument instanceof JsonObject properties)) {
      return null;
    }
    Map<String, Predicate<Object>> checks = new LinkedHashMap<>();
    for (String name : properties.fieldNames()) {
      Predicate<Object> check = compile(document, properties.getValue(name), depth + 1);
      if (check == null) {
        return null;
      }
      checks.put(name, check);
    }
    return value -> {
      if (value instanceof JsonObject object) {
        for (Map.Entry<String, Predicate<Object>> property : checks.entrySet()) {
          if (object.containsKey(property.getKey()) && !property.getValue().test(object.getValue(property.getKey()))) {
            return false;
          }
        }
      }
      return true;
    };
  }

  private static Predicate<Object> required(Object argument) {
    if (!(argument instanceof JsonArray names) || !names.stream().allMatch(String.class::isInstance)) {
      return null;
    }
    String[] required = names.stream().map(String.class::cast).toArray(String[]::new);
    return value -> {
      if (value instanceof JsonObject object) {
        for (String name : required) {
          if (!object.containsKey(name)) {
            return false;
          }
        }
      }
      return true;
    };
  }

  /** Applies to the members that {@code properties} does not list (there is no {@code patternProperties}: it would be refused). */
  private static Predicate<Object> additionalProperties(JsonObject document, JsonObject schema, Object argument, int depth) {
    Set<String> listed = schema.getValue("properties") instanceof JsonObject properties ? new HashSet<>(properties.fieldNames()) : Set.of();
    Predicate<Object> check = Boolean.FALSE.equals(argument) ? value -> false : compile(document, argument, depth + 1);
    if (check == null) {
      return null;
    }
    return value -> {
      if (value instanceof JsonObject object) {
        for (String name : object.fieldNames()) {
          if (!listed.contains(name) && !check.test(object.getValue(name))) {
            return false;
          }
        }
      }
      return true;
    };
  }

  private static Predicate<Object> items(JsonObject document, Object argument, int depth) {
    Predicate<Object> check = compile(document, argument, depth + 1);
    if (check == null) {
      return null;
    }
    return value -> {
      if (value instanceof JsonArray array) {
        for (int i = 0; i < array.size(); i++) {
          if (!check.test(array.getValue(i))) {
            return false;
          }
        }
      }
      return true;
    };
  }

  private static Predicate<Object> size(Object argument, boolean atLeast) {
    if (!isWholeNumber(argument)) {
      return null;
    }
    long limit = ((Number) argument).longValue();
    return value -> !(value instanceof JsonArray array) || (atLeast ? array.size() >= limit : array.size() <= limit);
  }

  /** Whole bounds against whole numbers only; any other number is left to the validator. */
  private static Predicate<Object> bound(Object argument, boolean lower) {
    if (!isWholeNumber(argument)) {
      return null;
    }
    long limit = ((Number) argument).longValue();
    return value -> !(value instanceof Number number)
        || isWholeNumber(number) && (lower ? number.longValue() >= limit : number.longValue() <= limit);
  }

  private static Predicate<Object> pattern(Object argument) {
    if (!(argument instanceof String source)) {
      return null;
    }
    Pattern pattern = Pattern.compile(source);
    return value -> !(value instanceof String text) || isPrintableAscii(text) && pattern.matcher(text).find();
  }

  private static boolean isPrintableAscii(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < ' ' || c > '~') {
        return false;
      }
    }
    return true;
  }

  private static Predicate<Object> stringEnum(Object argument) {
    if (!(argument instanceof JsonArray values) || !values.stream().allMatch(String.class::isInstance)) {
      return null;
    }
    Set<Object> allowed = new HashSet<>(values.getList());
    return value -> value instanceof String && allowed.contains(value);
  }
}
