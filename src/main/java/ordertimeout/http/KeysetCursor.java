package ordertimeout.http;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.regex.Pattern;

/**
 * The opaque cursor of a list paged newest first by keyset on an id: the last id shown, tagged with its list and
 * base64url-encoded. The tag keeps one list's cursor from being taken by another, and leaves room to change what a
 * cursor holds without breaking those handed out.
 */
final class KeysetCursor {
  /** The order searches, GET /v1/admin/orders and GET /v1/orders. */
  static final KeysetCursor ORDERS = new KeysetCursor("o1");
  /** The bulk jobs, GET /v1/admin/jobs. */
  static final KeysetCursor JOBS = new KeysetCursor("j1");

  private final String prefix;
  private final Pattern shape;

  private KeysetCursor(String tag) {
    this.prefix = tag + ":";
    this.shape = Pattern.compile(Pattern.quote(prefix) + "[0-9]{1,19}");
  }

  /** The cursor of the page after the one whose last id is {@code lastId}. */
  String of(long lastId) {
    byte[] text = (prefix + lastId).getBytes(StandardCharsets.US_ASCII);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(text);
  }

  /** The id a cursor continues below; null for none; 400 {@code invalid_cursor} for what this list did not hand out. */
  Long below(String cursor) {
    if (cursor == null) {
      return null;
    }
    try {
      String text = new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.US_ASCII);
      if (shape.matcher(text).matches()) {
        return Long.parseLong(text.substring(prefix.length()));
      }
    } catch (IllegalArgumentException e) {
      // not base64, or beyond 64 bits: invalid below
    }
    throw ApiException.badRequest(ProblemCodes.INVALID_CURSOR,
        "the cursor is not one this list handed out (pass a page's 'next' as it is)");
  }
}
