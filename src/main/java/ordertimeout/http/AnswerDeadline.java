package ordertimeout.http;

import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.metrics.NodeStats;

import java.util.Set;

/**
 * Every request is answered within {@code intake.answerWithinMillis} of its arrival, whatever it waits on. The
 * database's own timeouts cannot end a statement whose connection stopped answering (a cut or blackholed
 * network), and the client side of the connection has no timeout of its own: without this, such a request waits
 * until TCP gives up, minutes later. A request that changes something and is still running then answers 504
 * {@code outcome_unknown}: it may still be committed, and its advice names only the requests that are safe to send
 * again and then answer what happened (one with its Idempotency-Key, a pay, an extend to a closeAt; not an extend by
 * seconds, nor a bulk action without a key, which would apply twice); a read answers 504 {@code read_timeout}. What
 * the request would have answered later is dropped. An admin's reconciliation, which reads every unpaid order,
 * answers when it is done (bounded by its own wait); the feed's long poll ({@code GET /v1/events?wait=s}) gets its
 * wait on top.
 * The bound is kept by the request's connection ({@link HttpConnections}), which has a timer anyway.
 */
final class AnswerDeadline {
  /** {@link #boundMillis} of a request without a bound. */
  static final long NONE = -1;
  private static final Set<String> LONG_RUNNING = Set.of("/v1/admin/reconcile");
  private static final String LONG_POLL = "/v1/events";
  /** Past the feed's own bound on {@code wait} (its document's maximum), so that a bad value never stretches this. */
  private static final int LONG_POLL_MAX_SECONDS = 60;

  /** The writes that take effect once however often they are sent; any other would apply twice, or not tell. */
  private static final String SAFE_TO_SEND_AGAIN = "Sent again, these answer what happened and take effect once: "
      + "a create, an adjust, a bulk-close or a bulk-extend with the same Idempotency-Key; a pay, a cancel, a close, "
      + "a payment-started; an extend to a closeAt. Read the order or the jobs before sending anything else again: "
      + "an extend by extendSeconds or a bulk action without a key would apply twice";

  private final long millis;
  private final NodeStats stats;

  AnswerDeadline(long millis, NodeStats stats) {
    this.millis = millis;
    this.stats = stats;
  }

  /** The shortest bound of any request. */
  long shortestMillis() {
    return millis;
  }

  /** How long after its arrival the request must be answered, or {@link #NONE}. */
  long boundMillis(RoutingContext ctx) {
    String path = routedPath(ctx);
    return LONG_RUNNING.contains(path) ? NONE : millis + longPollMillis(ctx, path);
  }

  /**
   * The path as the router matches it: normalized, and a trailing slash ignored ({@code /v1/events/} is the feed). The
   * bound is set before any route is matched, so it cannot ask the matched route.
   */
  private static String routedPath(RoutingContext ctx) {
    String raw = ctx.request().path();
    // normalizing a bad escape throws; such a path matches no route, and RequestTargets answers it 400 right after
    String path = raw != null && RequestTargets.isMalformed(raw) ? raw : ctx.normalizedPath();
    int end = path.length();
    while (end > 1 && path.charAt(end - 1) == '/') {
      end--;
    }
    return path.substring(0, end);
  }

  private static long longPollMillis(RoutingContext ctx, String path) {
    String wait = LONG_POLL.equals(path) ? ctx.request().getParam("wait") : null;
    if (wait == null) {
      return 0;
    }
    try {
      return Math.min(Math.max(Integer.parseInt(wait), 0), LONG_POLL_MAX_SECONDS) * 1000L;
    } catch (NumberFormatException refusedByTheContract) {
      return 0;
    }
  }

  /** Answers the request now, unless it has been answered. */
  void answerLate(RoutingContext ctx) {
    if (ctx.response().headWritten() || ctx.response().closed()) {
      return;
    }
    boolean read = ctx.request().method() == HttpMethod.GET || ctx.request().method() == HttpMethod.HEAD;
    String code = read ? ProblemCodes.READ_TIMEOUT : ProblemCodes.OUTCOME_UNKNOWN;
    stats.requestShed(code);
    ctx.response().putHeader("Retry-After", "1");
    Problems.send(ctx, 504, code, read
        ? "no answer within " + millis + " ms (the database did not answer in time); retry later"
        : "not decided within " + millis + " ms (the database did not answer in time): it may still take effect. "
            + SAFE_TO_SEND_AGAIN);
  }
}
