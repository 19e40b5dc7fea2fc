package ordertimeout.http;

import io.netty.handler.codec.http.HttpResponseStatus;
import io.vertx.core.VertxException;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.http.ConnectionPoolTooBusyException;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;
import io.vertx.sqlclient.DatabaseException;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderRejected;
import ordertimeout.store.SqlStates;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.ConnectException;
import java.util.Locale;
import java.util.concurrent.TimeoutException;

import static net.logstash.logback.argument.StructuredArguments.kv;

/** The one failure handler of the router: every error becomes application/problem+json with a stable {@code code}. */
final class Problems {
  static final String CONTENT_TYPE = "application/problem+json";
  private static final Logger log = LoggerFactory.getLogger(Problems.class);

  private Problems() {}

  static void handle(RoutingContext ctx, NodeStats stats) {
    Throwable failure = ctx.failure();
    if (failure instanceof ApiException api) {
      send(ctx, api.status(), api.code(), api.getMessage());
    } else if (failure instanceof OrderRejected rejected) {
      sendRejected(ctx, stats, rejected);
    } else if (SqlStates.is(failure, SqlStates.LOCK_NOT_AVAILABLE)) {
      shed(ctx, stats, ProblemCodes.ROW_LOCKED, "a row this request needs is held by another transaction; nothing was changed, retry later");
    } else if (SqlStates.is(failure, SqlStates.QUERY_CANCELED)) {
      log.warn("{} {}: a statement was cancelled (statement timeout, or a drain that ran out of time): {} {}",
          ctx.request().method(), ctx.request().path(), failure.toString(), requestId(ctx));
      sendDatabaseUnavailable(ctx, "the database did not finish the request within its statement timeout; nothing "
          + "was changed, retry later");
    } else if (SqlStates.isNoPartition(failure)) {
      log.error("{} {}: no partition of orders for a new order's id: the partitions job has not created it (see "
          + "retention.partitionsAhead and its log) {}", ctx.request().method(), ctx.request().path(), requestId(ctx));
      sendDatabaseUnavailable(ctx, "the database has no room for new orders yet (no partition for their ids); "
          + "nothing was changed, retry later");
    } else if (failure instanceof ConnectionPoolTooBusyException) {
      shed(ctx, stats, ProblemCodes.OVERLOADED, "too many requests are waiting for a database connection on this node; "
          + "nothing was changed, retry later");
    } else if (failure == null) {
      sendStatus(ctx, ctx.statusCode());
    } else if (failure instanceof HttpClosedException) {
      log.debug("{} {}: the client closed the connection before its request was read {}", ctx.request().method(), ctx.request().path(),
          requestId(ctx));
    } else if (isDatabaseUnavailable(failure)) {
      log.warn("{} {}: database unavailable: {} {}", ctx.request().method(), ctx.request().path(), failure.toString(), requestId(ctx));
      sendDatabaseUnavailable(ctx, "the database cannot be reached; nothing was changed, retry later");
    } else if (failure instanceof PgException pg && pg.getSqlState() != null && pg.getSqlState().startsWith("40")) {
      ctx.response().putHeader("Retry-After", "1");
      send(ctx, 503, "transaction_conflict", "the request collided with a concurrent one and was rolled back; retry it");
    } else if (failure instanceof ReplyException) {
      log.warn("{} {}: an internal component did not answer: {} {}", ctx.request().method(), ctx.request().path(), failure.toString(),
          requestId(ctx));
      ctx.response().putHeader("Retry-After", "1");
      send(ctx, 503, "service_busy", "the service could not take the request now; nothing was changed, retry later");
    } else if (ctx.statusCode() >= 400 && ctx.statusCode() < 500) {
      sendStatus(ctx, ctx.statusCode());
    } else {
      log.error("{} {} failed {}", ctx.request().method(), ctx.request().path(), requestId(ctx), failure);
      send(ctx, 500, "internal_error", "an unexpected error; nothing was committed unless the order shows it");
    }
  }

  /** A 503 for a request that was not served: the client may retry after a second. */
  private static void shed(RoutingContext ctx, NodeStats stats, String code, String detail) {
    stats.requestShed(code);
    ctx.response().putHeader("Retry-After", "1");
    send(ctx, 503, code, detail);
  }

  private static void sendDatabaseUnavailable(RoutingContext ctx, String detail) {
    ctx.response().putHeader("Retry-After", "1");
    send(ctx, 503, "database_unavailable", detail);
  }

  private static void sendRejected(RoutingContext ctx, NodeStats stats, OrderRejected rejected) {
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
      case STOCK_OUT_OF_RANGE -> send(ctx, 409, "stock_out_of_range", rejected.getMessage());
      case PRECONDITION_FAILED -> send(ctx, 412, "precondition_failed", rejected.getMessage());
      case PRECONDITION_REQUIRED -> send(ctx, 428, "precondition_required", rejected.getMessage());
      case ORDER_NOT_PARKED -> send(ctx, 409, "order_not_parked", rejected.getMessage());
      case ORDER_ID_UNAVAILABLE -> {
        ctx.response().putHeader("Retry-After", "1");
        send(ctx, 503, "order_id_unavailable", rejected.getMessage());
      }
      case DATABASE_UNAVAILABLE -> sendDatabaseUnavailable(ctx, rejected.getMessage());
      case OVERLOADED -> shed(ctx, stats, ProblemCodes.OVERLOADED, rejected.getMessage());
      case ROW_LOCKED -> shed(ctx, stats, ProblemCodes.ROW_LOCKED, rejected.getMessage());
      case CLIENT_UNPAID_CAP -> send(ctx, 429, "client_unpaid_cap", rejected.getMessage());
      case CLIENT_UNITS_CAP -> send(ctx, 429, "client_units_cap", rejected.getMessage());
      case REOPEN_INSUFFICIENT_STOCK -> send(ctx, 409, "reopen_insufficient_stock", rejected.getMessage());
      case DEADLINE_IN_PAST -> send(ctx, 400, "deadline_in_past", rejected.getMessage());
      case DEADLINE_NOT_LATER -> send(ctx, 400, "deadline_not_later", rejected.getMessage());
      case DEADLINE_BEYOND_CEILING -> send(ctx, 400, "deadline_beyond_ceiling", rejected.getMessage());
      case ORDER_PAST_DEADLINE -> send(ctx, 409, "order_past_deadline", rejected.getMessage());
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
   * The database cannot be reached or is going away, as a restart, a crash or a cut network show it: a refused
   * or timed-out connect; a connection closed or reset under a query (vertx-sql-client's
   * {@link ClosedConnectionException}, a netty I/O error); the server's own word (SQLSTATE class 08, connection
   * exception; 57P01 admin shutdown, which {@code pg_ctl stop -m fast|immediate} and {@code pg_terminate_backend}
   * send; 57P02 crash shutdown; 57P03 cannot connect now, while it starts or recovers; class 53, insufficient
   * resources, such as too many connections); no pooled connection within the pool's wait (vertx-sql-client
   * fails that wait with "Timeout" or "Timeout waiting for connection", as a plain throwable of Vert.x's own),
   * or a pool closed while the node stops.
   */
  static boolean isDatabaseUnavailable(Throwable failure) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      if (cause instanceof ConnectException || cause instanceof TimeoutException || cause instanceof ClosedConnectionException
          || cause instanceof IOException) {
        return true;
      }
      if (cause instanceof DatabaseException database && isUnavailableState(database.getSqlState())) {
        return true;
      }
      String message = String.valueOf(cause.getMessage()).toLowerCase(Locale.ROOT);
      if (cause instanceof VertxException && message.contains("closed")
          || message.equals("timeout") || message.startsWith("timeout waiting for connection") || message.equals("pool closed")) {
        return true;
      }
    }
    return false;
  }

  private static boolean isUnavailableState(String sqlState) {
    return sqlState != null && (sqlState.startsWith("08") || sqlState.startsWith("53")
        || sqlState.equals("57P01") || sqlState.equals("57P02") || sqlState.equals("57P03"));
  }

  private static Object requestId(RoutingContext ctx) {
    return kv("requestId", AccessLog.requestId(ctx));
  }

  /** The code goes on the request's access line; the 5xx causes are logged above. */
  static void send(RoutingContext ctx, int status, String code, String detail) {
    if (ctx.response().ended()) {
      return; // answered already, by AnswerDeadline
    }
    AccessLog.problem(ctx, code);
    if (ctx.response().headWritten()) {
      ctx.request().connection().close();
      return;
    }
    ctx.response()
        .setStatusCode(status)
        .putHeader("Content-Type", CONTENT_TYPE)
        .end(body(status, code, detail).encode());
  }

  /** An RFC 9457 problem of the service's own shape. */
  static JsonObject body(int status, String code, String detail) {
    return new JsonObject()
        .put("type", "urn:order-timeout:problem:" + code)
        .put("title", HttpResponseStatus.valueOf(status).reasonPhrase())
        .put("status", status)
        .put("code", code)
        .put("detail", detail);
  }
}
