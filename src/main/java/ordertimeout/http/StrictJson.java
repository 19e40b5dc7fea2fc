package ordertimeout.http;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.JsonTokenId;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import io.netty.buffer.ByteBufInputStream;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.json.jackson.HybridJacksonPool;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Request bodies read as JSON (RFC 8259) and nothing else. A body decodes to what {@code Json.decodeValue} gives
 * (a {@code JsonObject} or {@code JsonArray} over maps and lists, strings, numbers, booleans, null; one value and
 * nothing after it), but a comment or an object with a member twice is refused. Vert.x's decoder takes comments
 * and keeps the last of two members of one name, so the shop's gateway or an audit log could read a body one way
 * and the service another.
 *
 * <p>The walk from tokens to values is a copy of Vert.x's {@code JacksonCodec.fromParser}, kept in step with
 * {@code Json.decodeValue} by {@code StrictJsonTest}, so that it finds a member twice by the size of its object's map
 * rather than by Jackson's duplicate detection, which costs more than the whole decode did (decision 0048).
 */
final class StrictJson {
  /**
   * Otherwise as Vert.x's own factory: Jackson's default read limits (Vert.x changes them only when the
   * vertx.jackson.* system properties are set) and Vert.x's pool of parser buffers.
   */
  private static final JsonFactory FACTORY = new JsonFactoryBuilder()
      .disable(JsonReadFeature.ALLOW_JAVA_COMMENTS)
      .recyclerPool(HybridJacksonPool.getInstance())
      .build();
  private static final String NOT_JSON = "the request body is not valid JSON";
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
      throw malformed(NOT_JSON);
    }
    try (parser) {
      parser.nextToken();
      Object value = value(parser);
      if (parser.nextToken() != null) {
        throw malformed(NOT_JSON);
      }
      return value instanceof Map<?, ?> ? new JsonObject(asMap(value)) : value instanceof List<?> list
          ? new JsonArray(list) : value;
    } catch (IOException e) {
      boolean comment = e instanceof JsonProcessingException refusal && refusal.getOriginalMessage() != null
          && refusal.getOriginalMessage().contains(COMMENT);
      throw malformed(comment ? NOT_JSON + ": comments are not allowed" : NOT_JSON);
    }
  }

  private static Object value(JsonParser parser) throws IOException {
    return switch (parser.currentTokenId()) {
      case JsonTokenId.ID_START_OBJECT -> members(parser);
      case JsonTokenId.ID_START_ARRAY -> items(parser);
      case JsonTokenId.ID_STRING -> parser.getText();
      case JsonTokenId.ID_NUMBER_INT, JsonTokenId.ID_NUMBER_FLOAT -> parser.getNumberValue();
      case JsonTokenId.ID_TRUE -> Boolean.TRUE;
      case JsonTokenId.ID_FALSE -> Boolean.FALSE;
      case JsonTokenId.ID_NULL -> null;
      default -> throw malformed(NOT_JSON);
    };
  }

  private static Map<String, Object> members(JsonParser parser) throws IOException {
    Map<String, Object> members = new LinkedHashMap<>();
    for (String name = parser.nextFieldName(); name != null; name = parser.nextFieldName()) {
      int size = members.size();
      parser.nextToken();
      members.put(name, value(parser));
      if (members.size() == size) {
        // the parser's context still names the member, after its value, with the path to its object
        String field = ProblemCodes.field(parser.getParsingContext().pathAsPointer().toString());
        throw malformed(NOT_JSON + ": duplicate field '" + shortened(field) + "'");
      }
    }
    return members;
  }

  private static List<Object> items(JsonParser parser) throws IOException {
    List<Object> items = new ArrayList<>();
    while (parser.nextToken() != JsonToken.END_ARRAY) {
      items.add(value(parser));
    }
    return items;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> asMap(Object members) {
    return (Map<String, Object>) members;
  }

  /** A client's member name, as far as a detail should echo it. */
  private static String shortened(String field) {
    return field.length() <= 64 ? field : field.substring(0, 64) + "…";
  }

  private static ApiException malformed(String detail) {
    return ApiException.badRequest(ProblemCodes.MALFORMED_JSON, detail);
  }
}
