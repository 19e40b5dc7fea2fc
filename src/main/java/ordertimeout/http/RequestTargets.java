package ordertimeout.http;

import io.vertx.ext.web.RoutingContext;

import java.util.regex.Pattern;

/**
 * Refuses a request target with bad percent-encoding ({@code /v1/orders/%zz}) before any route is matched:
 * Vert.x Web would fail while decoding the path parameters of the routes it tries, log the exception
 * with its stack trace and answer a plain-text 400, whatever the key.
 */
final class RequestTargets {
  static final String MALFORMED_URI = "malformed_uri";
  private static final Pattern BAD_ESCAPE = Pattern.compile("%(?![0-9A-Fa-f]{2})");

  private RequestTargets() {}

  static void refuseMalformed(RoutingContext ctx) {
    if (isMalformed(ctx.request().uri())) {
      Problems.send(ctx, 400, MALFORMED_URI, "the request target has a '%' not followed by two hexadecimal digits");
    } else {
      ctx.next();
    }
  }

  static boolean isMalformed(String target) {
    return target.indexOf('%') >= 0 && BAD_ESCAPE.matcher(target).find(); // most targets have no '%': no regex
  }
}
