package ordertimeout.http;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.Meters;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The node's HTTP connections: at most {@code http.maxConnections} open (one more is closed at once), and
 * deadlines on each request. Vert.x has no header or body timeout of its own, and its idle
 * timeout never fires on a client that sends one byte every few seconds (slowloris), so from the moment the server
 * waits for a request (the connection opened, or the previous request was answered) that request's head and body
 * must arrive within {@code http.requestReadTimeoutSeconds}, or the connection is closed. Once its head has arrived,
 * the request must be answered within its {@link AnswerDeadline}.
 * <p>Each connection keeps both with one timer that never sleeps longer than the shortest of the bounds: every
 * deadline lies at least that far after the moment it is set, so the timer wakes before it, and then sleeps until it.
 * A request only writes down its deadlines. A timer set and cancelled twice for every request (once for its arrival,
 * once for its answer) took 6% of this JVM's CPU under wrk's status reads (2026-12-05).
 * <p>A drain shuts the intake's servers down ({@link #shutdown}) before their verticles are undeployed.
 */
public final class HttpConnections {
  private final int max;
  private final long requestReadMillis;
  private final AtomicInteger open = new AtomicInteger();
  private final Counter refused;
  private final Counter readTimeouts;
  /** Every intake instance's server, listening, with the instance's context. */
  private final List<Served> servers = new CopyOnWriteArrayList<>();

  private record Served(Context context, HttpServer server) {}

  public HttpConnections(AppConfig.Http config, MeterRegistry registry) {
    this.max = config.maxConnections();
    this.requestReadMillis = config.requestReadTimeoutSeconds() * 1000L;
    Gauge.builder(Meters.HTTP_CONNECTIONS_OPEN, open, AtomicInteger::get)
        .description("HTTP connections open on this node (at most http.maxConnections)")
        .register(registry);
    this.refused = Counter.builder(Meters.HTTP_CONNECTIONS_REFUSED)
        .description("connections closed as soon as they opened because http.maxConnections were open")
        .register(registry);
    this.readTimeouts = Counter.builder(Meters.HTTP_REQUEST_READ_TIMEOUTS)
        .description("connections closed because a request's head and body had not arrived within http.requestReadTimeoutSeconds")
        .register(registry);
  }

  /**
   * The connection and request handlers of one HTTP server (one intake instance, one event loop); {@code answers}:
   * each request's answer deadline.
   */
  Guard guard(Vertx vertx, AnswerDeadline answers) {
    return new Guard(vertx, answers);
  }

  /** An intake instance's server once it listens; called on the instance's context. */
  void serving(HttpServer server) {
    servers.add(new Served(Vertx.currentContext(), server));
  }

  /**
   * Vert.x's graceful shutdown of every intake server, each on its instance's context. In 5.0.8 (HTTP/1.1) a server
   * stops taking connections (the port closes with the last one), closes its idle connections at once and each other
   * one as soon as the answer in progress is written; a request that arrives on it meanwhile is dropped unread, as on
   * a connection that closed. Completes once every connection is closed, or after {@code timeoutMillis}, having
   * closed the rest. Done before the intake is undeployed: the first instance's undeploy closes what lives on its
   * event loop, which the others use too (the group commits, and the intake pool's sockets).
   */
  public Future<Void> shutdown(long timeoutMillis) {
    List<Future<Void>> shutdowns = servers.stream().map(served -> {
      Promise<Void> closed = Promise.promise();
      served.context().runOnContext(on -> served.server().shutdown(timeoutMillis, TimeUnit.MILLISECONDS)
          .onComplete(closed));
      return closed.future();
    }).toList();
    return Future.join(shutdowns).mapEmpty();
  }

  final class Guard {
    private final Vertx vertx;
    private final AnswerDeadline answers;
    /** The longest a connection's timer sleeps: no deadline is set closer than this to when it is set. */
    private final long wakeWithinMillis;
    private final Map<HttpConnection, Deadlines> deadlines = new HashMap<>();

    private Guard(Vertx vertx, AnswerDeadline answers) {
      this.vertx = vertx;
      this.answers = answers;
      this.wakeWithinMillis = Math.max(1, Math.min(requestReadMillis, answers.shortestMillis()));
    }

    /** For {@code HttpServer.connectionHandler}. */
    void opened(HttpConnection connection) {
      if (open.incrementAndGet() > max) {
        open.decrementAndGet();
        refused.increment();
        connection.close();
        return;
      }
      Deadlines deadline = new Deadlines(connection);
      deadlines.put(connection, deadline);
      connection.closeHandler(closed -> {
        open.decrementAndGet();
        deadlines.remove(connection).closed();
      });
      deadline.opened();
    }

    /**
     * The router's first handler: the request's answer deadline starts, its read deadline stops once it has arrived,
     * and starts again for the next request once it is answered. HTTP/1.1 only: Vert.x hands a connection's next
     * (pipelined) request to the router once the answer to the one before has been written; an answer's end clears
     * only its own request's deadline, whichever of the two Vert.x runs first (5.0.8: the end).
     */
    void handle(RoutingContext ctx) {
      Deadlines deadline = deadlines.get(ctx.request().connection());
      if (deadline != null) {
        deadline.requestBegan(ctx);
        ctx.request().end().onComplete(arrived -> deadline.requestArrived());
        ctx.addEndHandler(answered -> deadline.answered(ctx));
      }
      ctx.next();
    }

    /** Everything runs on the server's event loop: the connection's handlers, the router's and the timer's. */
    private final class Deadlines {
      private static final long NONE = Long.MAX_VALUE;
      private final HttpConnection connection;
      private long timer = -1;
      /** When the awaited request must have arrived whole (node's monotonic millis); NONE while none is awaited. */
      private long readBy = NONE;
      /** When {@code answering} must be answered; NONE without a bound or a request. */
      private long answerBy = NONE;
      private RoutingContext answering;
      private boolean arrived;
      private boolean answered;
      private boolean closed;

      private Deadlines(HttpConnection connection) {
        this.connection = connection;
      }

      private void opened() {
        awaitRequest();
        sleep(wakeWithinMillis);
      }

      private void requestBegan(RoutingContext ctx) {
        long bound = answers.boundMillis(ctx);
        answering = ctx;
        answerBy = bound == AnswerDeadline.NONE ? NONE : now() + bound;
      }

      private void requestArrived() {
        arrived = true;
        if (answered) {
          awaitRequest();
        } else {
          readBy = NONE;
        }
      }

      private void answered(RoutingContext ctx) {
        if (answering == ctx) {
          answering = null;
          answerBy = NONE;
        }
        answered = true;
        if (arrived) {
          awaitRequest();
        }
      }

      /** The server waits for a (next) request from now on. */
      private void awaitRequest() {
        arrived = false;
        answered = false;
        readBy = now() + requestReadMillis;
      }

      private void wake() {
        timer = -1;
        if (closed) {
          return;
        }
        long now = now();
        if (readBy <= now) {
          readTimeouts.increment();
          connection.close();
          return;
        }
        if (answerBy <= now) {
          RoutingContext late = answering;
          answering = null;
          answerBy = NONE;
          answers.answerLate(late);
        }
        sleep(Math.min(Math.min(readBy, answerBy) - now, wakeWithinMillis));
      }

      private void sleep(long millis) {
        timer = vertx.setTimer(Math.max(1, millis), fired -> wake());
      }

      private void closed() {
        closed = true;
        answering = null;
        if (timer >= 0) {
          vertx.cancelTimer(timer);
          timer = -1;
        }
      }
    }
  }

  private static long now() {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime());
  }
}
