package ordertimeout.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * {@link StrictJson} against Vert.x's own decoder ({@code Json.decodeValue}, which the service used before): the same
 * values of the same types for what both take, a refusal where it refused, and besides only comments and a member
 * twice in one object refused, each with a detail that says so.
 */
class StrictJsonTest {
  static Stream<String> bodies() {
    return Stream.of(
        // taken by both
        "{\"userId\":\"u-1\",\"category\":\"virtual\",\"timeoutSeconds\":600,"
            + "\"items\":[{\"sku\":\"SKU-1\",\"qty\":1}]}",
        "{\"qty\":2.0,\"delta\":-1.0,\"zero\":-0,\"negativeZero\":-0.0,\"small\":1.5E-3,\"huge\":1e400,\"exp\":1E2}",
        "{\"int\":2147483647,\"long\":2147483648,\"maxLong\":9223372036854775807,\"big\":9223372036854775808,"
            + "\"negative\":-9223372036854775809,\"digits\":1234567890123456789012345678901234567890}",
        "{\"escaped\":\"\\u00e9\\ud83d\\ude00\\n\\t\\\"\\\\\\/\",\"raw\":\"é😀\u2028\",\"nul\":\"\\u0000\"}",
        "{\"url\":\"http://x.test//a/*b*/\",\"note\":\"// not a comment\",\"/*\":\"*/\"}",
        // one name at several depths and in sibling objects is no duplicate
        "{\"a\":{\"a\":{\"a\":1}},\"b\":[{\"a\":1},{\"a\":2}],\"c\":{},\"d\":{\"b\":1,\"c\":2}}",
        "{\"a\":null,\"b\":true,\"c\":false,\"d\":[],\"e\":[null,[1,[2]]],\"\":\"empty name\"}",
        " \t\r\n{\"padded\":1} \n",
        "\uFEFF{\"byteOrderMark\":1}",
        "[1,\"a\",null,{\"a\":1}]",
        "\"text\"", "42", "4.5", "true", "null",
        // refused by both
        "{\"userId\":", "{\"a\":1} {\"b\":2}", "{\"a\":1}x", "{\"a\":1},", "{\"a\":1}]", "{'a':1}", "{a:1}", "[1,]",
        "{\"a\":1,}", "{\"a\":NaN}", "{\"a\":01}", "{\"a\":1/2}", "# yaml\n{}", "{\"a\":\"\t\"}", "\"open", "[",
        "nul", "   ", "\u00ff", "{\"a\":1}\u0000");
  }

  @ParameterizedTest
  @MethodSource("bodies")
  void decodesAsVertxDid(String body) {
    Buffer buffer = Buffer.buffer(body);
    Object expected;
    try {
      expected = Json.decodeValue(buffer);
    } catch (DecodeException e) {
      Throwable refusal = catchThrowable(() -> StrictJson.decode(buffer));
      assertThat(refusal).isInstanceOf(ApiException.class);
      assertThat(((ApiException) refusal).code()).isEqualTo(ProblemCodes.MALFORMED_JSON);
      return;
    }
    Object actual = StrictJson.decode(buffer);
    assertThat(actual).isEqualTo(expected);
    assertThat(typed(actual)).isEqualTo(typed(expected));
  }

  static Stream<Arguments> notStrict() {
    return Stream.of(
        Arguments.of("{\"amount\":1,\"amount\":2}", "duplicate field 'amount'"),
        Arguments.of("{\"a\":null,\"a\":null}", "duplicate field 'a'"),
        Arguments.of("{\"a\":1,\"b\":2,\"c\":3,\"b\":4}", "duplicate field 'b'"),
        Arguments.of("{\"a\":{\"b\":1},\"a\":2}", "duplicate field 'a'"),
        Arguments.of("{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1,\"qty\":5}]}",
            "duplicate field 'items[0].qty'"),
        Arguments.of("[{\"a\":1},{\"b\":{\"c\":1,\"d\":2,\"c\":3}}]", "duplicate field '[1].b.c'"),
        Arguments.of("{\"" + "n".repeat(100) + "\":1,\"" + "n".repeat(100) + "\":2}",
            "duplicate field '" + "n".repeat(64) + "…'"),
        Arguments.of("{\"userId\":\"u-1\", // the buyer\n\"items\":[]}", "comments are not allowed"),
        Arguments.of("{\"userId\":\"u-1\",/* the buyer */\"items\":[]}", "comments are not allowed"),
        Arguments.of("/* first */{\"a\":1}", "comments are not allowed"),
        Arguments.of("{\"a\":1}// last", "comments are not allowed"),
        Arguments.of("{\"a\":[1,/**/2]}", "comments are not allowed"));
  }

  @ParameterizedTest
  @MethodSource("notStrict")
  void refusesCommentsAndMembersTwiceThatVertxTook(String body, String what) {
    Buffer buffer = Buffer.buffer(body);
    assertThat(Json.decodeValue(buffer)).isNotNull();
    assertThatThrownBy(() -> StrictJson.decode(buffer))
        .isInstanceOfSatisfying(ApiException.class, refusal -> {
          assertThat(refusal.status()).isEqualTo(400);
          assertThat(refusal.code()).isEqualTo(ProblemCodes.MALFORMED_JSON);
        })
        .hasMessage("the request body is not valid JSON: " + what);
  }

  /** The value with the class of every part of it, as the schema checks and handlers see them. */
  private static String typed(Object value) {
    if (value instanceof JsonObject object) {
      return "JsonObject" + typed(object.getMap());
    }
    if (value instanceof JsonArray array) {
      return "JsonArray" + typed(array.getList());
    }
    if (value instanceof Map<?, ?> map) {
      return map.getClass().getSimpleName() + map.entrySet().stream()
          .map(entry -> entry.getKey() + "=" + typed(entry.getValue())).collect(Collectors.joining(",", "{", "}"));
    }
    if (value instanceof List<?> list) {
      return list.getClass().getSimpleName() + list.stream().map(StrictJsonTest::typed)
          .collect(Collectors.joining(",", "[", "]"));
    }
    return value == null ? "null" : value.getClass().getSimpleName() + ":" + value;
  }
}
