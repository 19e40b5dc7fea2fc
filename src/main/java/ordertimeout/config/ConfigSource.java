package ordertimeout.config;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Raw configuration: a YAML document whose values can be overridden by environment variables
 * ({@code OT_} + the key path in upper snake case) and read by dotted key with typed getters that
 * name the key in every error.
 */
public final class ConfigSource {
  public static final String ENV_PREFIX = "OT_";
  private static final String PACKAGED_DEFAULT = "conf/application.yaml";

  private final Map<String, Object> root;
  private final Function<String, String> environment;
  /** Every dotted key looked up: a key of the file outside all of them is read by nobody (a misspelling). */
  private final Set<String> lookedUp = ConcurrentHashMap.newKeySet();

  private ConfigSource(Map<String, Object> root, Function<String, String> environment) {
    this.root = root;
    this.environment = environment;
  }

  /** Reads the file at {@code path}, or the packaged embedded default when the path is null and no file is there. */
  public static ConfigSource load(Path path, Function<String, String> environment) {
    Path file = path != null ? path : Path.of(PACKAGED_DEFAULT);
    if (Files.isRegularFile(file)) {
      try (InputStream in = Files.newInputStream(file)) {
        return new ConfigSource(parse(in, file.toString()), environment);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read configuration " + file, e);
      }
    }
    if (path != null) {
      throw new IllegalArgumentException("configuration file not found: " + path);
    }
    try (InputStream in = ConfigSource.class.getClassLoader().getResourceAsStream(PACKAGED_DEFAULT)) {
      if (in == null) {
        throw new IllegalStateException("no " + PACKAGED_DEFAULT + " in the working directory or on the class path");
      }
      return new ConfigSource(parse(in, PACKAGED_DEFAULT), environment);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static ConfigSource of(Map<String, Object> root, Function<String, String> environment) {
    return new ConfigSource(root, environment);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> parse(InputStream in, String name) {
    Object doc;
    try {
      doc = new Yaml(new SafeConstructor(new LoaderOptions())).load(in);
    } catch (YAMLException e) {
      throw new IllegalArgumentException(name + " is not valid YAML: " + yamlProblem(e));
    }
    if (doc == null) {
      return Map.of();
    }
    if (!(doc instanceof Map)) {
      throw new IllegalArgumentException(name + " must hold a YAML mapping at its top level");
    }
    return (Map<String, Object>) doc;
  }

  /**
   * SnakeYAML's messages quote the offending line, which may hold an API key or a password: only the problem
   * and where it is.
   */
  private static String yamlProblem(YAMLException e) {
    if (e instanceof MarkedYAMLException marked) {
      Mark mark = marked.getProblemMark();
      return marked.getProblem() + (mark == null ? "" : " (line " + (mark.getLine() + 1) + ", column " + (mark.getColumn() + 1) + ")");
    }
    return "the document cannot be read";
  }

  /** OT_ + upper snake case of the dotted path: orders.maxUnpaidPerUser -> OT_ORDERS_MAX_UNPAID_PER_USER. */
  public static String environmentVariable(String key) {
    String snake = key.replaceAll("([a-z0-9])([A-Z])", "$1_$2").replace('.', '_');
    return ENV_PREFIX + snake.toUpperCase(Locale.ROOT);
  }

  /** The value at the dotted key, an environment override winning over the file; null when absent. */
  public Object raw(String key) {
    lookedUp.add(key);
    String override = environment.apply(environmentVariable(key));
    if (override != null) {
      try {
        return new Yaml(new SafeConstructor(new LoaderOptions())).load(override);
      } catch (YAMLException e) {
        throw new ConfigException(key, environmentVariable(key) + " is not valid YAML: " + yamlProblem(e));
      }
    }
    Object node = root;
    for (String part : key.split("\\.")) {
      if (!(node instanceof Map<?, ?> map)) {
        return null;
      }
      node = map.get(part);
    }
    return node;
  }

  public String string(String key, String fallback) {
    Object value = raw(key);
    if (value == null) {
      return fallback;
    }
    if (value instanceof Map || value instanceof List) {
      throw new ConfigException(key, "expected a text value, found " + kindOf(value));
    }
    return value.toString();
  }

  public long number(String key, long fallback, long min, long max) {
    Object value = raw(key);
    long result;
    if (value == null) {
      result = fallback;
    } else if (value instanceof Integer || value instanceof Long) {
      result = ((Number) value).longValue();
    } else {
      try {
        result = Long.parseLong(value.toString().trim());
      } catch (NumberFormatException e) {
        throw new ConfigException(key, "expected a whole number, found '" + value + "'");
      }
    }
    if (result < min || result > max) {
      throw new ConfigException(key, result + " is outside [" + min + ", " + max + "]");
    }
    return result;
  }

  /** true or false (YAML's booleans, or the words in an environment variable). */
  public boolean bool(String key, boolean fallback) {
    Object value = raw(key);
    if (value == null) {
      return fallback;
    }
    if (value instanceof Boolean flag) {
      return flag;
    }
    String text = value.toString().trim();
    if (text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false")) {
      return Boolean.parseBoolean(text);
    }
    throw new ConfigException(key, "expected true or false, found " + kindOf(value));
  }

  public int integer(String key, int fallback, int min, int max) {
    return (int) number(key, fallback, min, max);
  }

  @SuppressWarnings("unchecked")
  public Map<String, Object> map(String key) {
    Object value = raw(key);
    if (value == null) {
      return Map.of();
    }
    if (!(value instanceof Map)) {
      throw new ConfigException(key, "expected a mapping, found " + kindOf(value));
    }
    return (Map<String, Object>) value;
  }

  public List<?> list(String key) {
    Object value = raw(key);
    if (value == null) {
      return List.of();
    }
    if (!(value instanceof List<?> list)) {
      throw new ConfigException(key, "expected a list, found " + kindOf(value));
    }
    return list;
  }

  /** What a value is, never the value itself: a wrong value may be a secret (an API key, a URL with its password). */
  private static String kindOf(Object value) {
    if (value instanceof Map) {
      return "a mapping";
    }
    if (value instanceof List) {
      return "a list";
    }
    return value instanceof String ? "a text value" : "a " + value.getClass().getSimpleName().toLowerCase(Locale.ROOT);
  }

  /**
   * Fails naming the first key of the file that no setting read, such as {@code retention.batchSzie}: it would
   * otherwise be ignored in silence and its setting keep its default. A mapping read whole (a client's overrides, the
   * webhooks) counts as read with everything under it.
   */
  public void requireEveryKeyRead() {
    unread("", root).ifPresent(key -> {
      throw new ConfigException(key, "not a setting of this service (misspelled, or under the wrong section?)");
    });
  }

  private Optional<String> unread(String prefix, Object node) {
    if (!prefix.isEmpty() && lookedUp.contains(prefix)) {
      return Optional.empty();
    }
    if (!(node instanceof Map<?, ?> map) || map.isEmpty()) {
      return prefix.isEmpty() ? Optional.empty() : Optional.of(prefix);
    }
    for (Map.Entry<?, ?> entry : map.entrySet()) {
      Optional<String> key = unread(prefix.isEmpty() ? String.valueOf(entry.getKey()) : prefix + "." + entry.getKey(),
          entry.getValue());
      if (key.isPresent()) {
        return key;
      }
    }
    return Optional.empty();
  }
}
