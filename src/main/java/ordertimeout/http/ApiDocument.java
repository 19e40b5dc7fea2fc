package ordertimeout.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
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

/**
 * The API document, {@code openapi.yaml}, the one home of the request rules: read once per node (blocking:
 * off the event loop) with this node's configured limits written into the schemas marked {@code x-config},
 * served at GET /openapi.yaml, and walked by the checks ({@link ContractChecks}) and the problem codes
 * ({@link ProblemCodes}).
 */
final class ApiDocument {
  static final String RESOURCE = "openapi.yaml";

  private final Buffer served;
  private final JsonObject json;

  private ApiDocument(Buffer served, JsonObject json) {
    this.served = served;
    this.json = json;
  }

  /** Reads the document and fills in this node's limits (blocking). */
  static ApiDocument read(AppConfig config) {
    Map<String, Object> document = withConfig(readYaml(), config);
    return new ApiDocument(Buffer.buffer(dumpYaml(document), "UTF-8"), toJson(document));
  }

  /** Serves the document: the source file with this node's limits. */
  void serve(RoutingContext ctx) {
    ctx.response().putHeader("Content-Type", "application/yaml; charset=utf-8").end(served);
  }

  JsonObject json() {
    return json;
  }

  private static Map<String, Object> readYaml() {
    try (InputStream in = ApiDocument.class.getClassLoader().getResourceAsStream(RESOURCE)) {
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
   * application/yaml; eclipse-vertx/vertx-openapi#107). Its patterns end at the value's end, as JSON Schema means
   * them ({@link #endingAtTheEnd}).
   */
  JsonObject requestsOnly() {
    JsonObject copy = json.copy();
    endPatternsAtTheEnd(copy);
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

  private static void endPatternsAtTheEnd(Object node) {
    if (node instanceof JsonObject object) {
      if (object.getValue("pattern") instanceof String pattern) {
        object.put("pattern", endingAtTheEnd(pattern));
      }
      object.forEach(field -> endPatternsAtTheEnd(field.getValue()));
    } else if (node instanceof JsonArray array) {
      array.forEach(ApiDocument::endPatternsAtTheEnd);
    }
  }

  /**
   * A schema's pattern as Java's {@link java.util.regex.Pattern} must be given it to mean what JSON Schema means. A
   * pattern is an ECMA 262 expression, whose {@code $} matches only at the end of the value; Java's {@code $} also
   * matches before a line terminator that ends it, and the validators run the patterns through Java's. So
   * {@code "SKU-1\n"} passed {@code ^[A-Za-z0-9._:@-]{1,64}$}, and an inventory row and an order's user id were
   * stored with the line feed. A final {@code $} becomes {@code \z}, Java's end of input; the document served keeps
   * the standard form.
   */
  static String endingAtTheEnd(String pattern) {
    boolean endAnchor = pattern.endsWith("$") && !pattern.endsWith("\\$");
    return endAnchor ? pattern.substring(0, pattern.length() - 1) + "\\z" : pattern;
  }

  /** Follows a {@code $ref} into the document ({@code app:///#/components/...} as vertx-openapi writes them). */
  static Object resolve(JsonObject document, Object node) {
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

  /** "#/items/0/qty" or "app:///#/components/schemas/X" → [items, 0, qty] or [components, schemas, X]. */
  static List<String> pointer(String location) {
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
}
