package ordertimeout.support;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;

/** Every event logged while it is open, on every logger (an appender on the root logger). */
public final class LogCapture implements AutoCloseable {
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
  private final Logger root;
  private final Logger leveled;
  private final Level levelBefore;

  private LogCapture(String loggerName, Level level) {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    leveled = loggerName == null ? null : context.getLogger(loggerName);
    levelBefore = leveled == null ? null : leveled.getLevel();
    if (leveled != null) {
      leveled.setLevel(level);
    }
    appender.setContext(context);
    appender.start();
    root.addAppender(appender);
  }

  public static LogCapture start() {
    return new LogCapture(null, null);
  }

  /**
   * As {@link #start()}, with {@code loggerName} at {@code level} until closed: a test that counts on a logger's lines
   * must not depend on the tests before it in the same JVM (the fault suite quiets {@code org.apache.kafka}).
   */
  public static LogCapture start(String loggerName, Level level) {
    return new LogCapture(loggerName, level);
  }

  public List<ILoggingEvent> events() {
    synchronized (appender) {
      return new ArrayList<>(appender.list);
    }
  }

  /** Each event's formatted message, its arguments and its exception with the stack trace and causes, one after the other. */
  public String text() {
    StringBuilder text = new StringBuilder();
    for (ILoggingEvent event : events()) {
      text.append(event.getLevel()).append(' ').append(event.getLoggerName()).append(": ").append(event.getFormattedMessage()).append('\n');
      if (event.getArgumentArray() != null) {
        for (Object argument : event.getArgumentArray()) {
          text.append("  argument: ").append(argument).append('\n');
        }
      }
      IThrowableProxy thrown = event.getThrowableProxy();
      if (thrown != null) {
        text.append(ThrowableProxyUtil.asString(thrown)).append('\n');
      }
    }
    return text.toString();
  }

  /** The events that carry an exception (logged with its stack trace). */
  public List<ILoggingEvent> withStackTraces() {
    return events().stream().filter(event -> event.getThrowableProxy() != null).toList();
  }

  @Override
  public void close() {
    root.detachAppender(appender);
    appender.stop();
    if (leveled != null) {
      leveled.setLevel(levelBefore);
    }
  }
}
