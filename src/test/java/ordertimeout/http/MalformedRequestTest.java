package ordertimeout.http;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.LogCapture;
import ordertimeout.support.RawHttp;
import ordertimeout.support.ServiceTestBase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/** Request targets with bad percent-encoding answer 400 problem+json {@code malformed_uri}, key or not, and log no stack trace. */
class MalformedRequestTest extends ServiceTestBase {

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
}
