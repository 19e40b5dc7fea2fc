package ordertimeout.support;

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

  private LogCapture() {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    appender.setContext(context);
    appender.start();
    root.addAppender(appender);
  }

  public static LogCapture start() {
    return new LogCapture();
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
  }
}
