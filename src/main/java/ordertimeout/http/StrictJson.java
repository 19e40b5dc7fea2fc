package ordertimeout.http;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import io.netty.buffer.ByteBufInputStream;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.jackson.HybridJacksonPool;
import io.vertx.core.json.jackson.JacksonCodec;

import java.io.IOException;
import java.io.InputStream;

/**
 * Request bodies read as JSON (RFC 8259) and nothing else. A body decodes to what {@code Json.decodeValue} gives
 * (a {@code JsonObject} or {@code JsonArray} over maps and lists, strings, numbers, booleans, null; one value and
 * nothing after it), but a comment or an object with a member twice is refused. Vert.x's decoder takes comments
 * and keeps the last of two members of one name, so the shop's gateway or an audit log could read a body one way
 * and the service another.
 */
final class StrictJson {
  /**
   * Otherwise as Vert.x's own factory: Jackson's default read limits (Vert.x changes them only when the
   * vertx.jackson.* system properties are set) and Vert.x's pool of parser buffers.
   */
  private static final JsonFactory FACTORY = new JsonFactoryBuilder()
      .disable(JsonReadFeature.ALLOW_JAVA_COMMENTS)
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .recyclerPool(HybridJacksonPool.getInstance())
      .build();
  private static final String NOT_JSON = "the request body is not valid JSON";
  /** The start of Jackson's message for a member seen twice (JsonReadContext). */
  private static final String DUPLICATE = "Duplicate field '";
  /** Part of Jackson's message for a '/' outside a string, which can only start a comment. */
  private static final String COMMENT = "maybe a (non-standard) comment";

  private StrictJson() {}

  /** The body's value; one that is not strict JSON fails with {@link ApiException} 400 {@code malformed_json}. */
  static Object decode(Buffer body) {
    JsonParser parser;
    try {
      // the bytes where they are, as Vert.x's decoder reads them (a ByteBufInputStream is a DataInput too)
      parser = FACTORY.createParser((InputStream) new ByteBufInputStream(((BufferInternal) body).getByteBuf()));
    } catch (IOException e) {
      throw ApiException.badRequest(ProblemCodes.MALFORMED_JSON, NOT_JSON);
    }
    try {
      // Vert.x's own walk from tokens to values; it closes the parser
      return JacksonCodec.fromParser(parser, Object.class);
    } catch (DecodeException e) {
      throw ApiException.badRequest(ProblemCodes.MALFORMED_JSON, detail(parser, e.getCause()));
    }
  }

  /** What is wrong, where it is one of the two things only this decoder refuses; else only that it is not JSON. */
  private static String detail(JsonParser parser, Throwable cause) {
    if (cause instanceof JsonParseException refusal && refusal.getOriginalMessage() != null) {
      if (refusal.getOriginalMessage().startsWith(DUPLICATE)) {
        // the context still names the member that came twice, with the path to its object
        String field = ProblemCodes.field(parser.getParsingContext().pathAsPointer().toString());
        return NOT_JSON + ": duplicate field '" + field + "'";
      }
      if (refusal.getOriginalMessage().contains(COMMENT)) {
        return NOT_JSON + ": comments are not allowed";
      }
    }
    return NOT_JSON;
  }
}
