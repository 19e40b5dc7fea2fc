package ordertimeout.http;

import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import java.util.regex.Pattern;

import static net.logstash.logback.argument.StructuredArguments.kv;

/**
 * The first handler of the router: gives every request an id (a sane incoming X-Request-Id, else a
 * new one), echoes it in the X-Request-Id response header, and writes one line per request to the
 * logger {@code access} when the response ends.
 *
 * <p>The ids travel in the routing context, not in SLF4J's MDC: the MDC is thread-local and does not
 * follow a request across event-loop callbacks. Handlers that log about a request pass
 * {@code kv("requestId", AccessLog.requestId(ctx))} explicitly; in JSON they are fields, in text key=value.
 */
public final class AccessLog {
  public static final String HEADER = "X-Request-Id";
  public static final String LOGGER = "access";
  private static final Logger log = LoggerFactory.getLogger(LOGGER);
  private static final Pattern SANE_ID = Pattern.compile("[\\x21-\\x7e]{1,64}");
  private static final String REQUEST_ID = "ordertimeout.requestId";
  private static final String ORDER_ID = "ordertimeout.orderId";
  private static final String PROBLEM = "ordertimeout.problem";

  private final Function<RoutingContext, String> client;

  /** {@code client}: the client of the request's API key, null when there is none (yet). */
  public AccessLog(Function<RoutingContext, String> client) {
    this.client = client;
  }

  public void handle(RoutingContext ctx) {
    long started = System.nanoTime();
    String id = idOf(ctx.request());
    ctx.put(REQUEST_ID, id);
    ctx.response().putHeader(HEADER, id);
    ctx.addEndHandler(done -> log(ctx, id, System.nanoTime() - started, done.succeeded()));
    ctx.next();
  }

  /** The request's own X-Request-Id when it is sane, else a new one. */
  static String idOf(HttpServerRequest request) {
    String incoming = request.getHeader(HEADER);
    return incoming != null && SANE_ID.matcher(incoming).matches() ? incoming : newId();
  }

  /**
   * The access line of a request the router never had, which HTTP's decoder could not read ({@link InvalidRequests}).
   * It has no method, path nor duration: when the request line could not be read, Netty makes up the first two.
   */
  static void unread(HttpServerRequest request, String id, String problem) {
    if (!log.isInfoEnabled()) {
      return;
    }
    List<Object> fields = new ArrayList<>(5);
    fields.add(kv("status", request.response().getStatusCode()));
    fields.add(kv("bytes", request.response().bytesWritten()));
    fields.add(kv("requestId", id));
    fields.add(kv("problem", problem));
    SocketAddress remote = request.remoteAddress();
    if (remote != null) {
      fields.add(kv("remote", remote.hostAddress()));
    }
    log.info("{} ".repeat(fields.size()).trim(), fields.toArray());
  }

  /** This request's id; null outside a request that went through the handler. */
  public static String requestId(RoutingContext ctx) {
    return ctx.get(REQUEST_ID);
  }

  /** The order the request is about, for its access line. */
  public static void orderId(RoutingContext ctx, long orderId) {
    ctx.put(ORDER_ID, orderId);
  }

  /** The problem code the request was answered with, for its access line. */
  public static void problem(RoutingContext ctx, String code) {
    ctx.put(PROBLEM, code);
  }

  private void log(RoutingContext ctx, String id, long nanos, boolean completed) {
    HttpServerRequest request = ctx.request();
    boolean probe = request.path().startsWith("/health/") || request.path().equals("/metrics");
    if (probe ? !log.isDebugEnabled() : !log.isInfoEnabled()) {
      return;
    }
    int status = ctx.response().getStatusCode();
    List<Object> fields = new ArrayList<>(10);
    fields.add(kv("method", request.method().name()));
    fields.add(kv("path", request.path()));
    fields.add(kv("status", status));
    fields.add(kv("bytes", ctx.response().bytesWritten()));
    fields.add(kv("durationMs", Math.round(nanos / 1e5) / 10.0));
    fields.add(kv("requestId", id));
    Object orderId = ctx.get(ORDER_ID);
    if (orderId != null) {
      fields.add(kv("orderId", orderId));
    }
    String problem = ctx.get(PROBLEM);
    if (problem != null) {
      fields.add(kv("problem", problem));
    }
    String caller = client.apply(ctx);
    if (caller != null) {
      fields.add(kv("client", caller));
    }
    SocketAddress remote = request.remoteAddress();
    if (remote != null) {
      fields.add(kv("remote", remote.hostAddress()));
    }
    if (!completed) {
      fields.add(kv("aborted", true));
    }
    String format = "{} ".repeat(fields.size()).trim();
    if (probe) {
      log.debug(format, fields.toArray());
    } else {
      log.info(format, fields.toArray());
    }
  }

  private static String newId() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    return Long.toHexString(random.nextLong() | Long.MIN_VALUE) + Long.toHexString(random.nextLong() | Long.MIN_VALUE);
  }
}
