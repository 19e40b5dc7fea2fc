package ordertimeout.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.spi.metrics.HttpServerMetrics;
import io.vertx.core.spi.observability.HttpRequest;
import io.vertx.core.spi.observability.HttpResponse;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;

/**
 * The HTTP server's metrics: one timer {@code ordertimeout_http_requests_seconds{route,method,code}} (its count is
 * the requests answered), in place of Vert.x's HTTP server metrics (decision 0040). The route is the last route of
 * Vert.x Web the request went through that has a path ("/v1/orders/:id"; "" when none matched), as Vert.x labelled
 * it; a method outside HTTP's usual ones is "other", so that a client cannot make series at will.
 *
 * <p>Per request this is one small object, a clock read at each end and a lookup of an existing timer; Vert.x's
 * registered a gauge and looked up a counter, a timer and two summaries by their tags.
 */
final class HttpRequestTimes implements HttpServerMetrics<HttpRequestTimes.Request, Void, Void> {
  private static final Set<HttpMethod> NAMED_METHODS = Set.of(HttpMethod.GET, HttpMethod.POST, HttpMethod.PUT,
      HttpMethod.DELETE, HttpMethod.PATCH, HttpMethod.HEAD, HttpMethod.OPTIONS);

  private final MeterRegistry registry;
  private final ConcurrentMap<Series, Timer> timers = new ConcurrentHashMap<>();

  HttpRequestTimes(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public Request requestBegin(Void socket, HttpRequest request) {
    return new Request(System.nanoTime(), NAMED_METHODS.contains(request.method()) ? request.method().name() : "other");
  }

  @Override
  public void requestRouted(Request request, String route) {
    if (route != null) {
      request.route = route;
    }
  }

  @Override
  public void responseEnd(Request request, HttpResponse response, long bytesWritten) {
    long nanos = System.nanoTime() - request.startedNanos;
    Series series = new Series(request.route, request.method, response.statusCode());
    Timer timer = timers.get(series);
    if (timer == null) {
      timer = timers.computeIfAbsent(series, this::timer);
    }
    timer.record(nanos, TimeUnit.NANOSECONDS);
  }

  private Timer timer(Series series) {
    return Timer.builder(Meters.HTTP_REQUESTS)
        .description("HTTP requests answered, by the route that answered them, and how long they took")
        .tag("route", series.route)
        .tag("method", series.method)
        .tag("code", Integer.toString(series.code))
        .register(registry);
  }

  static final class Request {
    final long startedNanos;
    final String method;
    String route = "";

    Request(long startedNanos, String method) {
      this.startedNanos = startedNanos;
      this.method = method;
    }
  }

  private record Series(String route, String method, int code) {}
}
