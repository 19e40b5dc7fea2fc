package ordertimeout.http;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.support.Await;
import ordertimeout.support.RawHttp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A connection's one timer keeps both of its request's deadlines ({@link HttpConnections}): a router with the guard in
 * front, one route that answers at once and one that never answers, so that only the answer deadline answers it
 * (300 ms here; the read deadline 30 s). The feed's long poll and the reconciliation never answer either: their
 * bounds are the feed's wait on top, and none.
 */
class RequestDeadlinesTest {
  private static final long ANSWER_WITHIN_MILLIS = 300;

  private Vertx vertx;
  private int port;

  @BeforeEach
  void startServer() {
    vertx = Vertx.vertx();
    HttpConnections connections = new HttpConnections(new AppConfig.Http("127.0.0.1", 0, 1, 10_000, 60, 30, 100),
        new SimpleMeterRegistry());
    AnswerDeadline answers = new AnswerDeadline(ANSWER_WITHIN_MILLIS,
        new NodeStats(new SimpleMeterRegistry(), 1, Duration.ofSeconds(60)));
    HttpConnections.Guard guard = connections.guard(vertx, answers);
    Router router = Router.router(vertx);
    router.route().handler(guard::handle);
    router.get("/now").handler(ctx -> ctx.response().end("now"));
    router.get("/never").handler(ctx -> { });
    router.post("/never").handler(ctx -> { });
    router.get("/v1/events").handler(ctx -> { });
    router.post("/v1/admin/reconcile").handler(ctx -> { });
    HttpServer server = vertx.createHttpServer().connectionHandler(guard::opened).requestHandler(router);
    port = server.listen(0, "127.0.0.1").await().actualPort();
  }

  @AfterEach
  void stopServer() {
    vertx.close().await();
  }

  /** The timer sleeps no longer than the answer bound, so a request on a connection idle past it is still on time. */
  @Test
  void aRequestOnAConnectionIdleLongerThanTheBoundIsAnsweredAtItsBound() {
    try (RawHttp http = RawHttp.connect(port)) {
      Await.sleep(ANSWER_WITHIN_MILLIS * 5 / 2);
      long sent = System.nanoTime();
      String answer = http.send(RawHttp.request("GET", "/never", "Connection: close")).readUntilClosed(5_000);
      long answeredAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);

      assertThat(answer).startsWith("HTTP/1.1 504 ").contains("\"read_timeout\"");
      assertThat(answeredAfter).as("answered after, in ms")
          .isBetween(ANSWER_WITHIN_MILLIS - 5, 5 * ANSWER_WITHIN_MILLIS);
    }
  }

  /**
   * Two requests sent at once on one connection: the second, handed to the router once the first is answered, gets
   * its own answer deadline from the connection's timer.
   */
  @Test
  void aPipelinedRequestKeepsItsOwnBound() {
    try (RawHttp http = RawHttp.connect(port)) {
      String answers = http.send(RawHttp.request("GET", "/now") + RawHttp.request("GET", "/never", "Connection: close"))
          .readUntilClosed(5_000);

      assertThat(http.closedByServer()).as(answers).isTrue();
      assertThat(answers).startsWith("HTTP/1.1 200 ").contains("HTTP/1.1 504 ", "\"read_timeout\"");
    }
  }

  /**
   * A write not decided in time may still take effect: the answer names the writes that are safe to send again, and
   * warns off the ones that would apply twice (an extend by seconds, a bulk action without its key).
   */
  @Test
  void aWriteNotDecidedInTimeNamesOnlyTheSafeRetries() {
    try (RawHttp http = RawHttp.connect(port)) {
      String answer = http.send(RawHttp.request("POST", "/never", "Content-Length: 0", "Connection: close"))
          .readUntilClosed(5_000);

      assertThat(answer).startsWith("HTTP/1.1 504 ").contains("\"outcome_unknown\"")
          .contains("a bulk-close or a bulk-extend with the same Idempotency-Key", "an extend to a closeAt")
          .contains("an extend by extendSeconds or a bulk action without a key would apply twice")
          .doesNotContain("send it again");
    }
  }

  /** The router takes the path with a trailing slash as the same route, and so does the bound. */
  @Test
  void theFeedsLongPollGetsItsWaitOnTopWithOrWithoutATrailingSlash() {
    for (String target : List.of("/v1/events?wait=1", "/v1/events/?wait=1")) {
      try (RawHttp http = RawHttp.connect(port)) {
        long sent = System.nanoTime();
        String answer = http.send(RawHttp.request("GET", target, "Connection: close")).readUntilClosed(5_000);
        long answeredAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);

        assertThat(answer).as(target).startsWith("HTTP/1.1 504 ");
        assertThat(answeredAfter).as(target + " answered after, in ms, past the wait of 1 s")
            .isGreaterThanOrEqualTo(1_000 + ANSWER_WITHIN_MILLIS - 5);
      }
    }
  }

  @Test
  void theReconciliationIsNotBoundWithOrWithoutATrailingSlash() {
    for (String target : List.of("/v1/admin/reconcile", "/v1/admin/reconcile/")) {
      try (RawHttp http = RawHttp.connect(port)) {
        String answer = http.send(RawHttp.request("POST", target, "Content-Length: 0", "Connection: close"))
            .readUntilClosed((int) (4 * ANSWER_WITHIN_MILLIS));

        assertThat(answer).as(target + ": nothing answered past the bound of other requests").isEmpty();
      }
    }
  }
}
