package ordertimeout.http;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.regex.Pattern;

/**
 * The opaque cursor of a list paged by keyset on an id: the last id shown, tagged with its list and base64url-encoded.
 * The tag keeps one list's cursor from being taken by another, and leaves room to change what a cursor holds without
 * breaking those handed out. Whether a list goes on below or above that id is the list's own.
 */
final class KeysetCursor {
  /** The order searches, GET /v1/admin/orders and GET /v1/orders, newest first. */
  static final KeysetCursor ORDERS = new KeysetCursor("o1", false);
  /** The bulk jobs, GET /v1/admin/jobs, newest first. */
  static final KeysetCursor JOBS = new KeysetCursor("j1", false);
  /** The parked orders, GET /v1/admin/orders/parked, by id; it handed out raw order ids before. */
  static final KeysetCursor PARKED_ORDERS = new KeysetCursor("p1", true);
  /** The webhook deliveries, GET /v1/admin/webhooks/deliveries, by id; it handed out raw delivery ids before. */
  static final KeysetCursor WEBHOOK_DELIVERIES = new KeysetCursor("d1", true);

  /** A raw id, as lists handed out before their cursors were opaque; an opaque one starts with its tag's letter. */
  private static final Pattern RAW_ID = Pattern.compile("[0-9]{1,19}");

  private final String prefix;
  private final Pattern shape;
  private final boolean takesRawIds;

  private KeysetCursor(String tag, boolean takesRawIds) {
    this.prefix = tag + ":";
    this.shape = Pattern.compile(Pattern.quote(prefix) + "[0-9]{1,19}");
    this.takesRawIds = takesRawIds;
  }

  /** The cursor of the page after the one whose last id is {@code lastId}. */
  String of(long lastId) {
    byte[] text = (prefix + lastId).getBytes(StandardCharsets.US_ASCII);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(text);
  }

  /** Whether {@code cursor} is a raw id of before, which this list still takes (counted, to know when it can go). */
  boolean isRawId(String cursor) {
    return takesRawIds && cursor != null && RAW_ID.matcher(cursor).matches();
  }

  /**
   * The last id shown before the page a cursor asks for; null for none. A list that handed out raw ids before also
   * takes those, for the clients that hold one. 400 {@code invalid_cursor} for what this list did not hand out.
   */
  Long lastShown(String cursor) {
    if (cursor == null) {
      return null;
    }
    try {
      if (isRawId(cursor)) {
        return Long.parseLong(cursor);
      }
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
