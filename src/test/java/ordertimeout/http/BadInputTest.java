package ordertimeout.http;

import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.net.http.HttpRequest;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** Every kind of bad input answers a 4xx problem with a stable code, and changes nothing. */
class BadInputTest extends ServiceTestBase {
  private static final String ITEM = "{\"sku\":\"SKU-1\",\"qty\":1}";
  private static final String VALID_ORDER = "{\"userId\":\"u-1\",\"items\":[" + ITEM + "]}";
  private static final String ADJUST = "/v1/admin/inventory/SKU-1/adjust";
  /** Bodies Vert.x's own decoder took: a member twice (it kept the last), comments (not JSON). */
  private static final String MEMBER_TWICE = "{\"userId\":\"u-1\",\"userId\":\"u-2\",\"items\":[" + ITEM + "]}";
  private static final String MEMBER_TWICE_IN_ITEM =
      "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1,\"qty\":5}]}";
  private static final String LINE_COMMENT = "{\"userId\":\"u-1\", // the buyer\n\"items\":[" + ITEM + "]}";
  private static final String BLOCK_COMMENT = "{\"userId\":\"u-1\",/* the buyer */\"items\":[" + ITEM + "]}";

  private String existingOrderId;

  @BeforeEach
  void oneOrderAndStock() {
    api.setStock("SKU-1", 10);
    existingOrderId = create("u-0", 600, "SKU-1", 1).getString("id");
  }

  static Stream<Arguments> badCreates() {
    String manyItems = "[" + String.join(",", java.util.Collections.nCopies(51, ITEM)) + "]";
    return Stream.of(
        Arguments.of("malformed JSON", "{\"userId\":", 400, "malformed_json"),
        Arguments.of("not an object", "[1,2]", 400, "malformed_json"),
        Arguments.of("empty body", "", 400, "malformed_json"),
        Arguments.of("member twice", MEMBER_TWICE, 400, "malformed_json"),
        Arguments.of("member twice in an item", MEMBER_TWICE_IN_ITEM, 400, "malformed_json"),
        Arguments.of("line comment", LINE_COMMENT, 400, "malformed_json"),
        Arguments.of("block comment", BLOCK_COMMENT, 400, "malformed_json"),
        Arguments.of("unknown field", "{\"userId\":\"u-1\",\"items\":[" + ITEM + "],\"coupon\":\"X\"}", 400, "unknown_field"),
        Arguments.of("unknown item field", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1,\"price\":3}]}", 400, "unknown_field"),
        Arguments.of("missing userId", "{\"items\":[" + ITEM + "]}", 400, "invalid_field"),
        Arguments.of("userId of wrong type", "{\"userId\":7,\"items\":[" + ITEM + "]}", 400, "invalid_field"),
        Arguments.of("over-long userId", "{\"userId\":\"" + "u".repeat(65) + "\",\"items\":[" + ITEM + "]}", 400, "invalid_field"),
        Arguments.of("missing items", "{\"userId\":\"u-1\"}", 400, "invalid_field"),
        Arguments.of("items not a list", "{\"userId\":\"u-1\",\"items\":" + ITEM + "}", 400, "invalid_field"),
        Arguments.of("empty items", "{\"userId\":\"u-1\",\"items\":[]}", 400, "invalid_field"),
        Arguments.of("too many items", "{\"userId\":\"u-1\",\"items\":" + manyItems + "}", 400, "invalid_field"),
        Arguments.of("item not an object", "{\"userId\":\"u-1\",\"items\":[\"SKU-1\"]}", 400, "invalid_field"),
        Arguments.of("qty zero", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":0}]}", 400, "invalid_field"),
        Arguments.of("qty negative", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":-3}]}", 400, "invalid_field"),
        Arguments.of("qty fractional", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1.5}]}", 400, "invalid_field"),
        Arguments.of("qty as text", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":\"1\"}]}", 400, "invalid_field"),
        Arguments.of("qty absurd", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":99999999999999}]}", 400, "invalid_field"),
        Arguments.of("over-long sku", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"" + "S".repeat(65) + "\",\"qty\":1}]}", 400, "invalid_field"),
        Arguments.of("sku with spaces", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU 1\",\"qty\":1}]}", 400, "invalid_field"),
        Arguments.of("sku ending in a line feed", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\\n\",\"qty\":1}]}", 400,
            "invalid_field"),
        Arguments.of("userId ending in a line feed", "{\"userId\":\"u-1\\n\",\"items\":[" + ITEM + "]}", 400, "invalid_field"),
        Arguments.of("unknown sku", "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"NO-SUCH\",\"qty\":1}]}", 400, "unknown_sku"),
        Arguments.of("duplicate sku", "{\"userId\":\"u-1\",\"items\":[" + ITEM + "," + ITEM + "]}", 400, "duplicate_sku"),
        Arguments.of("unknown category", "{\"userId\":\"u-1\",\"category\":\"rare\",\"items\":[" + ITEM + "]}", 400, "unknown_category"),
        Arguments.of("category of wrong type", "{\"userId\":\"u-1\",\"category\":1,\"items\":[" + ITEM + "]}", 400, "invalid_field"),
        Arguments.of("timeout zero", "{\"userId\":\"u-1\",\"timeoutSeconds\":0,\"items\":[" + ITEM + "]}", 400, "invalid_timeout"),
        Arguments.of("timeout over 7 days", "{\"userId\":\"u-1\",\"timeoutSeconds\":604801,\"items\":[" + ITEM + "]}", 400, "invalid_timeout"),
        Arguments.of("timeout as text", "{\"userId\":\"u-1\",\"timeoutSeconds\":\"60\",\"items\":[" + ITEM + "]}", 400, "invalid_field"),
        Arguments.of("body over the size limit", "{\"userId\":\"" + "x".repeat(70_000) + "\"}", 413, "payload_too_large"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badCreates")
  void badCreateIsRefusedAndChangesNothing(String what, String body, int status, String code) {
    Map<String, Object> before = snapshot();
    Api.Response response = api.send(api.request("POST", "/v1/orders", Api.USER_KEY, body).header("Idempotency-Key", "bad-" + what.hashCode()));
    assertProblem(response, status, code);
    assertThat(snapshot()).isEqualTo(before);
  }

  @Test
  void aMemberTwiceIsNamedWithItsPath() {
    Map<String, Object> before = snapshot();
    Api.Response response = api.send(api.request("POST", "/v1/orders", Api.USER_KEY, MEMBER_TWICE_IN_ITEM)
        .header("Idempotency-Key", "member-twice"));
    assertProblem(response, 400, "malformed_json");
    assertThat(response.json().getString("detail"))
        .isEqualTo("the request body is not valid JSON: duplicate field 'items[0].qty'");
    assertThat(snapshot()).isEqualTo(before);
  }

  static Stream<Arguments> badRequests() {
    return Stream.of(
        Arguments.of("no Idempotency-Key", "POST", "/v1/orders", Api.USER_KEY, VALID_ORDER, null, 400, "missing_idempotency_key"),
        Arguments.of("over-long Idempotency-Key", "POST", "/v1/orders", Api.USER_KEY, VALID_ORDER, "k".repeat(256), 400, "invalid_idempotency_key"),
        Arguments.of("order id not a number", "GET", "/v1/orders/abc", Api.USER_KEY, null, null, 400, "invalid_order_id"),
        Arguments.of("order id over 64 bits", "POST", "/v1/orders/99999999999999999999/pay", Api.USER_KEY, null, null, 400, "invalid_order_id"),
        Arguments.of("unknown route", "GET", "/v1/nothing-here", Api.USER_KEY, null, null, 404, "not_found"),
        Arguments.of("stock below zero", "PUT", "/v1/admin/inventory/SKU-1", Api.ADMIN_KEY, "{\"available\":-1}", null, 400, "invalid_field"),
        Arguments.of("stock as text", "PUT", "/v1/admin/inventory/SKU-1", Api.ADMIN_KEY, "{\"available\":\"5\"}", null, 400, "invalid_field"),
        Arguments.of("stock unknown field", "PUT", "/v1/admin/inventory/SKU-1", Api.ADMIN_KEY, "{\"available\":5,\"reserved\":0}", null, 400, "unknown_field"),
        Arguments.of("stock malformed", "PUT", "/v1/admin/inventory/SKU-1", Api.ADMIN_KEY, "{", null, 400, "malformed_json"),
        Arguments.of("bad sku in path", "PUT", "/v1/admin/inventory/" + "S".repeat(65), Api.ADMIN_KEY, "{\"available\":5}", null, 400, "invalid_sku"),
        Arguments.of("sku in path ending in a line feed", "PUT", "/v1/admin/inventory/SKU-2%0A", Api.ADMIN_KEY,
            "{\"available\":5}", null, 400, "invalid_sku"),
        Arguments.of("stock set without If-Match", "PUT", "/v1/admin/inventory/SKU-1", Api.ADMIN_KEY, "{\"available\":5}", null, 428, "precondition_required"),
        Arguments.of("adjust by zero", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":0}", "k-1", 400, "invalid_field"),
        Arguments.of("adjust without delta", "POST", ADJUST, Api.ADMIN_KEY, "{}", "k-1", 400, "invalid_field"),
        Arguments.of("adjust by text", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":\"5\"}", "k-1", 400, "invalid_field"),
        Arguments.of("adjust by a fraction", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":1.5}", "k-1", 400, "invalid_field"),
        Arguments.of("adjust beyond its bound", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":1000000000001}", "k-1", 400, "invalid_field"),
        Arguments.of("adjust beyond 64 bits", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":-9223372036854775809}", "k-1", 400, "invalid_field"),
        Arguments.of("adjust unknown field", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":1,\"reason\":\"count\"}", "k-1", 400, "unknown_field"),
        Arguments.of("adjust malformed", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":", "k-1", 400, "malformed_json"),
        Arguments.of("adjust with delta twice", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":-10,\"delta\":1}", "k-1",
            400, "malformed_json"),
        Arguments.of("adjust with a line comment", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":1 // one more\n}", "k-1",
            400, "malformed_json"),
        Arguments.of("adjust with a block comment", "POST", ADJUST, Api.ADMIN_KEY, "{/* one more */\"delta\":1}", "k-1",
            400, "malformed_json"),
        Arguments.of("adjust without Idempotency-Key", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":1}", null, 400, "missing_idempotency_key"),
        Arguments.of("adjust below zero", "POST", ADJUST, Api.ADMIN_KEY, "{\"delta\":-10}", "k-1", 409, "stock_out_of_range"),
        Arguments.of("adjust of no SKU", "POST", "/v1/admin/inventory/NO-SUCH/adjust", Api.ADMIN_KEY, "{\"delta\":1}", "k-1", 404, "inventory_not_found"),
        Arguments.of("stock log limit zero", "GET", "/v1/admin/inventory/SKU-1/log?limit=0", Api.ADMIN_KEY, null, null, 400, "invalid_field"),
        Arguments.of("stock log limit not a number", "GET", "/v1/admin/inventory/SKU-1/log?limit=ten", Api.ADMIN_KEY, null, null, 400, "invalid_field"),
        // the contract refuses only a cursor longer than any the list hands out; ParkedOrderTest has the others
        Arguments.of("parked list cursor too long", "GET", "/v1/admin/orders/parked?cursor=" + "x".repeat(65),
            Api.ADMIN_KEY, null, null, 400, "invalid_cursor"),
        Arguments.of("parked list limit over 200", "GET", "/v1/admin/orders/parked?limit=201", Api.ADMIN_KEY, null, null, 400, "invalid_field"),
        Arguments.of("retry of an order id not a number", "POST", "/v1/admin/orders/abc/retry", Api.ADMIN_KEY, null, null, 400, "invalid_order_id"),
        Arguments.of("retry of no order", "POST", "/v1/admin/orders/12345/retry", Api.ADMIN_KEY, null, null, 404, "order_not_found"),
        Arguments.of("user key on the parked list", "GET", "/v1/admin/orders/parked", Api.USER_KEY, null, null, 403, "forbidden"),
        Arguments.of("user key on the latest reconciliation", "GET", "/v1/admin/reconciliation/latest", Api.USER_KEY, null, null, 403, "forbidden"),
        Arguments.of("no key", "GET", "/v1/orders/1", null, null, null, 401, "unauthorized"),
        Arguments.of("unknown key", "POST", "/v1/orders", "not-a-key", VALID_ORDER, "k-1", 401, "unauthorized"),
        Arguments.of("user key on admin stock", "PUT", "/v1/admin/inventory/SKU-1", Api.USER_KEY, "{\"available\":5}", null, 403, "forbidden"),
        Arguments.of("user key on stock adjust", "POST", ADJUST, Api.USER_KEY, "{\"delta\":1}", "k-1", 403, "forbidden"),
        Arguments.of("user key on admin close", "POST", "/v1/admin/orders/1/close", Api.USER_KEY, null, null, 403, "forbidden"),
        Arguments.of("user key on admin stats", "GET", "/v1/admin/stats", Api.USER_KEY, null, null, 403, "forbidden"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badRequests")
  void badRequestIsRefusedAndChangesNothing(String what, String method, String path, String key, String body,
                                            String idempotencyKey, int status, String code) {
    Map<String, Object> before = snapshot();
    HttpRequest.Builder request = api.request(method, path, key, body);
    if (idempotencyKey != null) {
      request.header("Idempotency-Key", idempotencyKey);
    }
    Api.Response response = api.send(request);
    assertProblem(response, status, code);
    if (status == 401) {
      assertThat(response.raw().headers().firstValue("WWW-Authenticate")).contains("Bearer");
    }
    assertThat(snapshot()).isEqualTo(before);
  }

  private static void assertProblem(Api.Response response, int status, String code) {
    assertThat(response.status()).as(response.body()).isEqualTo(status);
    assertThat(response.contentType()).isEqualTo("application/problem+json");
    assertThat(response.code()).isEqualTo(code);
    assertThat(response.json().getInteger("status")).isEqualTo(status);
    assertThat(response.json().getString("detail")).isNotBlank();
  }

  /** Everything a request could have changed. */
  private Map<String, Object> snapshot() {
    return Map.of(
        "orders", Sql.rows("SELECT id, status, closed_at, paid_at FROM orders ORDER BY id"),
        "inventory", Sql.rows("SELECT sku, available, reserved FROM stock ORDER BY sku"),
        "inventoryLog", Sql.count("SELECT count(*) FROM inventory_log"),
        "keys", Sql.count("SELECT count(*) FROM idempotency_keys"),
        "outbox", Sql.count("SELECT count(*) FROM outbox"),
        "log", Sql.count("SELECT count(*) FROM order_log"),
        "closeFailures", Sql.count("SELECT count(*) FROM close_failures"),
        "existing", List.of(existingOrderId));
  }
}
