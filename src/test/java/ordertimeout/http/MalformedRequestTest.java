package ordertimeout.http;

import ch.qos.logback.classic.Level;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Await;
import ordertimeout.support.LogCapture;
import ordertimeout.support.RawHttp;
import ordertimeout.support.ServiceTestBase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Request targets with bad percent-encoding answer 400 problem+json {@code malformed_uri}, key or not, and log no stack
 * trace. Requests that HTTP's decoder cannot read (a request line or header fields over the server's limits, Vert.x's
 * defaults of 4,096 and 8,192 bytes; a request line that is not HTTP) answer problem+json of their own, with an
 * X-Request-Id, and close the connection.
 */
class MalformedRequestTest extends ServiceTestBase {
  private static final Pattern REQUEST_ID = Pattern.compile("(?im)^x-request-id: ([\\x21-\\x7e]{1,64})$");

  @ParameterizedTest
  @ValueSource(strings = {"/v1/orders/%zz", "/v1/orders/12%", "/v1/orders?userId=%zz", "/v1/admin/inventory/SKU%g1", "/health/%zz", "/%zz"})
  void badPercentEncodingIsAProblemOfItsOwn(String target) {
    try (LogCapture logs = LogCapture.start()) {
      for (String authorization : new String[] {"Authorization: Bearer " + ordertimeout.support.Api.ADMIN_KEY, "X-No-Key: 1"}) {
        String answer;
        try (RawHttp http = RawHttp.connect(service.config().http().port())) {
          answer = http.send(RawHttp.request("GET", target, authorization, "Connection: close")).readUntilClosed(10_000);
        }
        assertThat(answer).as(target).startsWith("HTTP/1.1 400 ");
        assertThat(answer.toLowerCase()).contains("content-type: application/problem+json");
        JsonObject problem = new JsonObject(answer.substring(answer.indexOf("\r\n\r\n") + 4));
        assertThat(problem.getString("code")).isEqualTo("malformed_uri");
        assertThat(problem.getInteger("status")).isEqualTo(400);
      }
      assertThat(logs.withStackTraces()).as(logs.text()).isEmpty();
    }
  }

  static Stream<Arguments> unreadable() {
    StringBuilder headers = new StringBuilder("Authorization: Bearer " + ordertimeout.support.Api.ADMIN_KEY);
    // Just over Vert.x's 8,192 bytes: the server reads it all before it answers and closes, so its close is not a
    // reset, which could drop the answer before the test reads it.
    for (int i = 0; i < 100; i++) {
      headers.append("\r\nX-Filler-").append(i).append(": ").append("f".repeat(88));
    }
    return Stream.of(
        Arguments.of("a 9,000-byte target", RawHttp.request("GET", "/v1/orders/" + "1".repeat(8_989)), 414,
            "uri_too_long"),
        Arguments.of("10 KB of header fields", RawHttp.request("GET", "/v1/orders/1", headers.toString()), 431,
            "headers_too_large"),
        Arguments.of("a request line that is not HTTP", "this is not http\r\n\r\n", 400, "malformed_request"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("unreadable")
  void aRequestTheDecoderCannotReadIsAProblemOfItsOwn(String what, String request, int status, String code) {
    try (LogCapture logs = LogCapture.start()) {
      String answer;
      boolean closed;
      try (RawHttp http = RawHttp.connect(service.config().http().port())) {
        answer = http.send(request).readUntilClosed(10_000);
        closed = http.closedByServer();
      }
      assertThat(answer).as(what).matches("(?s)HTTP/1\\.[01] " + status + " .*");
      int headEnd = answer.indexOf("\r\n\r\n");
      String head = answer.substring(0, headEnd);
      assertThat(head.toLowerCase(Locale.ROOT)).as(head).contains("content-type: application/problem+json");
      Matcher id = REQUEST_ID.matcher(head);
      assertThat(id.find()).as("an X-Request-Id in " + head).isTrue();
      JsonObject problem = new JsonObject(answer.substring(headEnd + 4));
      assertThat(problem.getString("code")).isEqualTo(code);
      assertThat(problem.getInteger("status")).isEqualTo(status);
      assertThat(problem.getString("type")).isEqualTo("urn:order-timeout:problem:" + code);
      assertThat(closed).as("the connection closed after the answer").isTrue();
      String requestId = id.group(1);
      Await.until("its access line", Duration.ofSeconds(5), () -> logs.text().contains("requestId=" + requestId));
      assertThat(logs.text()).contains("problem=" + code);
      assertThat(logs.events()).as(logs.text()).noneMatch(event -> event.getLevel() == Level.ERROR);
    }
  }
}
