package ordertimeout.config;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.classic.util.ContextInitializer;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import io.vertx.core.json.JsonObject;
import net.logstash.logback.encoder.LogstashEncoder;
import ordertimeout.config.AppConfig.LogFormat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import static net.logstash.logback.argument.StructuredArguments.kv;
import static org.assertj.core.api.Assertions.assertThat;

class LogSetupTest {
  private final LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();

  /** Back to logback.xml for the other tests of the run. */
  @AfterEach
  void restoreLogbackXml() throws Exception {
    context.reset();
    new ContextInitializer(context).autoConfig();
  }

  @Test
  void jsonIsOneValidObjectPerLineWithTheStructuredFieldsAndTheStackTrace() {
    Encoder<ILoggingEvent> encoder = LogSetup.encoder(LogFormat.JSON, context);
    Logger logger = context.getLogger("ordertimeout.test");
    LoggingEvent event = new LoggingEvent(Logger.class.getName(), logger, Level.ERROR,
        "close failed\nsecond line {} {}", new IllegalStateException("boom"),
        new Object[] {kv("orderId", 42L), kv("requestId", "req-1")});
    event.setMDCPropertyMap(Map.of("node", "1"));

    String line = new String(encoder.encode(event), StandardCharsets.UTF_8);

    assertThat(line).endsWith(System.lineSeparator());
    assertThat(line.strip()).doesNotContain("\n").doesNotContain("\r");
    JsonObject json = new JsonObject(line.strip());
    assertThat(json.getString("@timestamp")).isNotBlank();
    assertThat(json.getString("level")).isEqualTo("ERROR");
    assertThat(json.getString("logger_name")).isEqualTo("ordertimeout.test");
    assertThat(json.getString("thread_name")).isEqualTo(Thread.currentThread().getName());
    assertThat(json.getString("message")).isEqualTo("close failed\nsecond line orderId=42 requestId=req-1");
    assertThat(json.getLong("orderId")).isEqualTo(42L);
    assertThat(json.getString("requestId")).isEqualTo("req-1");
    assertThat(json.getString("node")).as("MDC").isEqualTo("1");
    assertThat(json.getString("stack_trace")).contains("IllegalStateException: boom").contains("LogSetupTest");
  }

  @Test
  void applySetsTheFormatAndTheLevels() {
    LogSetup.apply(new AppConfig.Logging(LogFormat.JSON, "WARN", Map.of("access", "OFF", "ordertimeout", "DEBUG")));

    Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    assertThat(root.getLevel()).isEqualTo(Level.WARN);
    assertThat(context.getLogger("access").getLevel()).isEqualTo(Level.OFF);
    assertThat(context.getLogger("ordertimeout").getLevel()).isEqualTo(Level.DEBUG);
    assertThat(root.getAppender(LogSetup.APPENDER)).isInstanceOfSatisfying(OutputStreamAppender.class,
        appender -> assertThat(appender.getEncoder()).isInstanceOf(LogstashEncoder.class));

    LogSetup.apply(new AppConfig.Logging(LogFormat.TEXT, null, Map.of()));
    assertThat(root.getLevel()).as("unset keeps the level").isEqualTo(Level.WARN);
    assertThat(root.getAppender(LogSetup.APPENDER)).isInstanceOfSatisfying(OutputStreamAppender.class,
        appender -> assertThat(appender.getEncoder()).isNotInstanceOf(LogstashEncoder.class));
    assertThat(root.iteratorForAppenders()).toIterable().hasSize(1);
  }
}
