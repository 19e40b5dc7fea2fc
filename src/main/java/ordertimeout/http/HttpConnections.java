package ordertimeout.http;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.Meters;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The node's HTTP connections: at most {@code http.maxConnections} open (one more is closed at once), and
 * a deadline on each request's arrival. Vert.x has no header or body timeout of its own, and its idle
 * timeout never fires on a client that sends one byte every few seconds (slowloris), so each connection
 * gets a timer of {@code http.requestReadTimeoutSeconds} from the moment the server waits for a request
 * (the connection opened, or the previous request was answered) until that request's head and body have
 * arrived; when it fires, the connection is closed. The timer does not run while a request is handled.
 */
public final class HttpConnections {
  private final int max;
  private final long requestReadMillis;
  private final AtomicInteger open = new AtomicInteger();
  private final Counter refused;
  private final Counter readTimeouts;

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

  /** The connection and request handlers of one HTTP server (one intake instance, one event loop). */
  Guard guard(Vertx vertx) {
    return new Guard(vertx);
  }

  final class Guard {
    private final Vertx vertx;
    private final Map<HttpConnection, Deadline> deadlines = new HashMap<>();

    private Guard(Vertx vertx) {
      this.vertx = vertx;
    }

    /** For {@code HttpServer.connectionHandler}. */
    void opened(HttpConnection connection) {
      if (open.incrementAndGet() > max) {
        open.decrementAndGet();
        refused.increment();
        connection.close();
        return;
      }
      Deadline deadline = new Deadline(connection);
      deadlines.put(connection, deadline);
      connection.closeHandler(closed -> {
        open.decrementAndGet();
        deadlines.remove(connection).closed();
      });
      deadline.start();
    }

    /** The router's first handler: the deadline stops once the request has arrived, and starts again once it is answered. */
    void handle(RoutingContext ctx) {
      Deadline deadline = deadlines.get(ctx.request().connection());
      if (deadline != null) {
        ctx.request().end().onComplete(arrived -> deadline.requestArrived());
        ctx.addEndHandler(answered -> deadline.answered());
      }
      ctx.next();
    }

    /** Everything runs on the server's event loop: the connection's handlers, the router's and the timer's. */
    private final class Deadline {
      private final HttpConnection connection;
      private long timer = -1;
      private boolean arrived;
      private boolean answered;
      private boolean closed;

      private Deadline(HttpConnection connection) {
        this.connection = connection;
      }

      private void requestArrived() {
        arrived = true;
        if (answered) {
          start();
        } else {
          stop();
        }
      }

      private void answered() {
        answered = true;
        if (arrived) {
          start();
        }
      }

      /** The server waits for a (next) request from now on. */
      private void start() {
        stop();
        arrived = false;
        answered = false;
        if (!closed) {
          timer = vertx.setTimer(requestReadMillis, fired -> {
            timer = -1;
            readTimeouts.increment();
            connection.close();
          });
        }
      }

      private void stop() {
        if (timer >= 0) {
          vertx.cancelTimer(timer);
          timer = -1;
        }
      }

      private void closed() {
        closed = true;
        stop();
      }
    }
  }
}
