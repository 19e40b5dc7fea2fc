package ordertimeout.config;

/** A configuration value that is missing or wrong; the message names the key. */
public final class ConfigException extends RuntimeException {
  public ConfigException(String key, String problem) {
    super("configuration key '" + key + "': " + problem);
  }
}
