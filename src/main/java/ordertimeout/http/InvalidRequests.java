package ordertimeout.http;

import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;

/**
 * Answers the requests that HTTP's decoder could not read, which never reach the router, as the service answers its
 * other errors (problem+json with a stable code, and an X-Request-Id) rather than with Vert.x's bare status: a
 * request line longer than the server reads (HttpServerOptions' maxInitialLineLength) 414 {@code uri_too_long},
 * header fields larger than it reads (maxHeaderSize) 431 {@code headers_too_large}, anything else the decoder
 * cannot parse 400 {@code malformed_request}. The statuses are Vert.x's default handler's. Then the connection is
 * closed, as that handler does: the decoder has given up on its bytes, so no next request can be found in them.
 */
final class InvalidRequests {
  static final String URI_TOO_LONG = "uri_too_long";
  static final String HEADERS_TOO_LARGE = "headers_too_large";
  static final String MALFORMED_REQUEST = "malformed_request";

  private InvalidRequests() {}

  /** For {@code HttpServer.invalidRequestHandler}. */
  static void answer(HttpServerRequest request) {
    Throwable cause = request.decoderResult().cause();
    if (cause instanceof TooLongHttpLineException) {
      answer(request, 414, URI_TOO_LONG, "the request line (method, target, version) is longer than this server reads");
    } else if (cause instanceof TooLongHttpHeaderException) {
      answer(request, 431, HEADERS_TOO_LARGE, "the request's header fields are larger than this server reads");
    } else {
      answer(request, 400, MALFORMED_REQUEST, "the request is not HTTP/1.1 that this server can read");
    }
  }

  private static void answer(HttpServerRequest request, int status, String code, String detail) {
    String id = AccessLog.idOf(request);
    request.response()
        .setStatusCode(status)
        .putHeader(AccessLog.HEADER, id)
        .putHeader(HttpHeaders.CONTENT_TYPE, Problems.CONTENT_TYPE)
        .putHeader(HttpHeaders.CONNECTION, HttpHeaders.CLOSE)
        .end(Problems.body(status, code, detail).encode())
        .onComplete(written -> {
          AccessLog.unread(request, id, code);
          request.connection().close();
        });
  }
}
