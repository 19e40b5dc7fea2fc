package ordertimeout.config;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.Encoder;
import net.logstash.logback.encoder.LogstashEncoder;
import org.slf4j.ILoggerFactory;
import org.slf4j.LoggerFactory;

/**
 * Applies the {@code logging} configuration to logback once the configuration is read:
 * logback.xml (plain text) covers the lines before that and the tests.
 * The root's console appender is replaced by one with the configured encoder, and the levels are set.
 */
public final class LogSetup {
  public static final String APPENDER = "STDOUT";
  /** The same pattern as logback.xml; structured arguments print as key=value inside the message. */
  static final String TEXT_PATTERN = "%d{HH:mm:ss.SSS} %-5level [%thread] %logger{0} - %msg%n";

  private LogSetup() {}

  /** Does nothing when SLF4J is bound to something other than logback. */
  public static void apply(AppConfig.Logging logging) {
    ILoggerFactory factory = LoggerFactory.getILoggerFactory();
    if (!(factory instanceof LoggerContext context)) {
      return;
    }
    Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    ConsoleAppender<ILoggingEvent> appender = new ConsoleAppender<>();
    appender.setContext(context);
    appender.setName(APPENDER);
    appender.setEncoder(encoder(logging.format(), context));
    appender.start();
    root.detachAndStopAllAppenders();
    root.addAppender(appender);
    if (logging.rootLevel() != null) {
      root.setLevel(Level.toLevel(logging.rootLevel()));
    }
    logging.levels().forEach((name, level) -> context.getLogger(name).setLevel(Level.toLevel(level)));
  }

  /** A started encoder for the format: LogstashEncoder's one JSON object per line, or the text pattern. */
  public static Encoder<ILoggingEvent> encoder(AppConfig.LogFormat format, LoggerContext context) {
    Encoder<ILoggingEvent> encoder;
    if (format == AppConfig.LogFormat.JSON) {
      LogstashEncoder json = new LogstashEncoder();
      json.setIncludeContext(false);
      encoder = json;
    } else {
      PatternLayoutEncoder text = new PatternLayoutEncoder();
      text.setPattern(TEXT_PATTERN);
      encoder = text;
    }
    encoder.setContext(context);
    encoder.start();
    return encoder;
  }
}
