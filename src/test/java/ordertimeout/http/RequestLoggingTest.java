package ordertimeout.http;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.read.ListAppender;
import io.vertx.core.json.JsonObject;
import ordertimeout.config.AppConfig.LogFormat;
import ordertimeout.config.LogSetup;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** Request ids, the access log and the per-order lines, on the real service, read back as JSON. */
class RequestLoggingTest extends ServiceTestBase {
  private final LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
  private final ListAppender<ILoggingEvent> accessEvents = new ListAppender<>();
  private final ListAppender<ILoggingEvent> allEvents = new ListAppender<>();
  private Encoder<ILoggingEvent> json;

  @BeforeAll
  void attach() {
    json = LogSetup.encoder(LogFormat.JSON, context);
    for (ListAppender<ILoggingEvent> appender : List.of(accessEvents, allEvents)) {
      appender.setContext(context);
      appender.start();
    }
    context.getLogger(AccessLog.LOGGER).addAppender(accessEvents);
    context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).addAppender(allEvents);
  }

  @AfterAll
  void detach() {
    context.getLogger(AccessLog.LOGGER).detachAppender(accessEvents);
    context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).detachAppender(allEvents);
  }

  @BeforeEach
  void clear() {
    synchronized (accessEvents) {
      accessEvents.list.clear();
    }
    synchronized (allEvents) {
      allEvents.list.clear();
    }
  }

  @Test
  void anIncomingRequestIdIsEchoedAndCarriedByTheAccessLine() {
    Api.Response response = api.send(api.request("GET", "/v1/orders/123456", Api.USER_KEY, null)
        .header(AccessLog.HEADER, "shop-req-42"));

    assertThat(response.status()).isEqualTo(404);
    assertThat(response.raw().headers().firstValue(AccessLog.HEADER)).contains("shop-req-42");
    JsonObject line = awaitLine(accessEvents, "shop-req-42");
    assertThat(line.getString("logger_name")).isEqualTo("access");
    assertThat(line.getString("level")).isEqualTo("INFO");
    assertThat(line.getString("method")).isEqualTo("GET");
    assertThat(line.getString("path")).isEqualTo("/v1/orders/123456");
    assertThat(line.getInteger("status")).isEqualTo(404);
    assertThat(line.getDouble("durationMs")).isNotNull().isGreaterThanOrEqualTo(0.0);
    assertThat(line.getLong("bytes")).isPositive();
    assertThat(line.getLong("orderId")).isEqualTo(123456L);
    assertThat(line.getString("problem")).as("the 4xx code").isEqualTo("order_not_found");
    assertThat(line.getString("client")).isEqualTo("dev-user");
    assertThat(line.getString("remote")).isEqualTo("127.0.0.1");
    assertThat(line.getString("message")).contains("method=GET", "status=404", "requestId=shop-req-42");
  }

  @Test
  void aRequestWithoutASaneIdGetsAGeneratedOne() {
    Api.Response none = api.get("/v1/orders/1", Api.USER_KEY);
    Api.Response tooLong = api.send(api.request("GET", "/v1/orders/1", Api.USER_KEY, null).header(AccessLog.HEADER, "x".repeat(65)));

    for (Api.Response response : List.of(none, tooLong)) {
      String id = response.raw().headers().firstValue(AccessLog.HEADER).orElseThrow();
      assertThat(id).matches("[0-9a-f]{32}");
      assertThat(awaitLine(accessEvents, id).getString("path")).isEqualTo("/v1/orders/1");
    }
    assertThat(none.raw().headers().firstValue(AccessLog.HEADER)).isNotEqualTo(tooLong.raw().headers().firstValue(AccessLog.HEADER));
  }

  @Test
  void aProblemIsLoggedWithItsCodeAndTheRequestId() {
    Api.Response unauthorized = api.send(api.request("GET", "/v1/orders/1", null, null).header(AccessLog.HEADER, "no-key-1"));
    Api.Response missingKey = api.send(api.request("POST", "/v1/orders", Api.USER_KEY, "{}").header(AccessLog.HEADER, "no-idem-1"));
    Api.Response unknownRoute = api.send(api.request("GET", "/nowhere", null, null).header(AccessLog.HEADER, "lost-1"));

    assertThat(unauthorized.status()).isEqualTo(401);
    assertThat(missingKey.status()).isEqualTo(400);
    assertThat(unknownRoute.status()).isEqualTo(404);
    assertThat(awaitLine(accessEvents, "no-key-1").getString("problem")).isEqualTo("unauthorized");
    assertThat(awaitLine(accessEvents, "no-key-1").containsKey("client")).isFalse();
    assertThat(awaitLine(accessEvents, "no-idem-1").getString("problem")).isEqualTo("missing_idempotency_key");
    assertThat(awaitLine(accessEvents, "no-idem-1").getString("client")).isEqualTo("dev-user");
    assertThat(awaitLine(accessEvents, "lost-1").getString("problem")).isEqualTo("not_found");
    assertThat(unknownRoute.raw().headers().firstValue(AccessLog.HEADER)).contains("lost-1");
  }

  @Test
  void stateChangesCarryTheOrderIdAndTheRequestId() {
    api.setStock("SKU-LOG", 10);
    Api.Response created = api.send(api.request("POST", "/v1/orders", Api.USER_KEY, orderBody("u-log", 60, "SKU-LOG", 1).encode())
        .header("Idempotency-Key", "log-1").header(AccessLog.HEADER, "create-1"));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    long orderId = Long.parseLong(created.json().getValue("id").toString());
    assertThat(awaitLine(accessEvents, "create-1").getLong("orderId")).isEqualTo(orderId);

    Api.Response paid = api.send(api.request("POST", "/v1/orders/" + orderId + "/pay", Api.USER_KEY, null).header(AccessLog.HEADER, "pay-1"));
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    JsonObject payLine = awaitLine(allEvents, "pay-1", "ordertimeout.http.OrderRoutes");
    assertThat(payLine.getString("message")).startsWith("order paid");
    assertThat(payLine.getLong("orderId")).isEqualTo(orderId);
  }

  private JsonObject awaitLine(ListAppender<ILoggingEvent> appender, String requestId) {
    return awaitLine(appender, requestId, AccessLog.LOGGER);
  }

  /** The first event of {@code logger} with that request id, as the JSON line the service would write. */
  private JsonObject awaitLine(ListAppender<ILoggingEvent> appender, String requestId, String logger) {
    JsonObject[] found = new JsonObject[1];
    Await.until("a " + logger + " line with requestId " + requestId, Duration.ofSeconds(5), () -> {
      List<ILoggingEvent> events;
      synchronized (appender) {
        events = new ArrayList<>(appender.list);
      }
      Optional<JsonObject> line = events.stream()
          .filter(event -> event.getLoggerName().equals(logger))
          .map(this::encode)
          .filter(json -> requestId.equals(json.getString("requestId")))
          .findFirst();
      line.ifPresent(json -> found[0] = json);
      return line.isPresent();
    });
    return found[0];
  }

  private JsonObject encode(ILoggingEvent event) {
    String line = new String(json.encode(event), StandardCharsets.UTF_8);
    assertThat(line.strip()).doesNotContain("\n");
    return new JsonObject(line);
  }
}
