package ordertimeout.http;

import io.netty.handler.codec.http.HttpResponseStatus;
import io.vertx.core.VertxException;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.pgclient.PgException;
import ordertimeout.order.OrderRejected;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.ConnectException;
import java.util.Locale;
import java.util.concurrent.TimeoutException;

import static net.logstash.logback.argument.StructuredArguments.kv;

/** The one failure handler of the router: every error becomes application/problem+json with a stable {@code code}. */
final class Problems {
  private static final Logger log = LoggerFactory.getLogger(Problems.class);

  private Problems() {}

  static void handle(RoutingContext ctx) {
    Throwable failure = ctx.failure();
    if (failure instanceof ApiException api) {
      send(ctx, api.status(), api.code(), api.getMessage());
    } else if (failure instanceof OrderRejected rejected) {
      sendRejected(ctx, rejected);
    } else if (failure == null) {
      sendStatus(ctx, ctx.statusCode());
    } else if (isDatabaseUnavailable(failure)) {
      log.warn("{} {}: database unavailable: {} {}", ctx.request().method(), ctx.request().path(), failure.toString(), requestId(ctx));
      ctx.response().putHeader("Retry-After", "1");
      send(ctx, 503, "database_unavailable", "the database cannot be reached; nothing was changed, retry later");
    } else if (failure instanceof PgException pg && pg.getSqlState() != null && pg.getSqlState().startsWith("40")) {
      ctx.response().putHeader("Retry-After", "1");
      send(ctx, 503, "transaction_conflict", "the request collided with a concurrent one and was rolled back; retry it");
    } else if (failure instanceof ReplyException) {
      log.warn("{} {}: an internal component did not answer: {} {}", ctx.request().method(), ctx.request().path(), failure.toString(),
          requestId(ctx));
      ctx.response().putHeader("Retry-After", "1");
      send(ctx, 503, "service_busy", "the service could not take the request now; nothing was changed, retry later");
    } else if (ctx.statusCode() == 413) {
      sendStatus(ctx, 413);
    } else {
      log.error("{} {} failed {}", ctx.request().method(), ctx.request().path(), requestId(ctx), failure);
      send(ctx, 500, "internal_error", "an unexpected error; nothing was committed unless the order shows it");
    }
  }

  private static void sendRejected(RoutingContext ctx, OrderRejected rejected) {
    switch (rejected.reason()) {
      case ORDER_NOT_FOUND -> send(ctx, 404, "order_not_found", rejected.getMessage());
      case INVENTORY_NOT_FOUND -> send(ctx, 404, "inventory_not_found", rejected.getMessage());
      case UNKNOWN_SKU -> send(ctx, 400, "unknown_sku", rejected.getMessage());
      case INSUFFICIENT_STOCK -> send(ctx, 409, "insufficient_stock", rejected.getMessage());
      case REQUEST_IN_PROGRESS -> send(ctx, 409, "request_in_progress", rejected.getMessage());
      case IDEMPOTENCY_KEY_REUSED -> send(ctx, 422, "idempotency_key_reused", rejected.getMessage());
      case ORDER_CLOSED -> send(ctx, 409, "order_closed", rejected.getMessage());
      case ORDER_PAID -> send(ctx, 409, "order_paid", rejected.getMessage());
      case TOO_MANY_UNPAID_ORDERS -> send(ctx, 429, "too_many_unpaid_orders", rejected.getMessage());
      case CLIENT_UNPAID_CAP -> send(ctx, 429, "client_unpaid_cap", rejected.getMessage());
      case CLIENT_UNITS_CAP -> send(ctx, 429, "client_units_cap", rejected.getMessage());
    }
  }

  private static void sendStatus(RoutingContext ctx, int status) {
    switch (status) {
      case 404 -> send(ctx, 404, "not_found", "no such resource");
      case 405 -> send(ctx, 405, "method_not_allowed", "this resource does not take that method");
      case 413 -> send(ctx, 413, "payload_too_large", "the request body is over the size limit");
      case 400 -> send(ctx, 400, "bad_request", "the request could not be read");
      default -> send(ctx, status, "http_" + status, HttpResponseStatus.valueOf(status).reasonPhrase());
    }
  }

  /**
   * The database cannot be reached, or no pooled connection came within the pool's wait (vertx-sql-client fails
   * that wait with "Timeout" or "Timeout waiting for connection", as a plain throwable of Vert.x's own).
   */
  static boolean isDatabaseUnavailable(Throwable failure) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      if (cause instanceof ConnectException || cause instanceof TimeoutException) {
        return true;
      }
      String message = String.valueOf(cause.getMessage()).toLowerCase(Locale.ROOT);
      if (cause instanceof VertxException && message.contains("closed")
          || message.equals("timeout") || message.startsWith("timeout waiting for connection")) {
        return true;
      }
    }
    return false;
  }

  private static Object requestId(RoutingContext ctx) {
    return kv("requestId", AccessLog.requestId(ctx));
  }

  /** The code goes on the request's access line; the 5xx causes are logged above. */
  static void send(RoutingContext ctx, int status, String code, String detail) {
    AccessLog.problem(ctx, code);
    if (ctx.response().headWritten()) {
      ctx.request().connection().close();
      return;
    }
    JsonObject problem = new JsonObject()
        .put("type", "urn:order-timeout:problem:" + code)
        .put("title", HttpResponseStatus.valueOf(status).reasonPhrase())
        .put("status", status)
        .put("code", code)
        .put("detail", detail);
    ctx.response()
        .setStatusCode(status)
        .putHeader("Content-Type", "application/problem+json")
        .end(problem.encode());
  }
}
