package ordertimeout.http;

import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Metrics;
import ordertimeout.support.RawHttp;
import ordertimeout.support.ServiceTestBase;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Clients that send half a request, or send it a byte at a time, are closed once
 * {@code http.requestReadTimeoutSeconds} has passed; requests that arrive in time are served meanwhile.
 */
class SlowClientsTest extends ServiceTestBase {
  private static final int BOUND_SECONDS = 2;
  private static final int HALF_SENT = 300;
  private static final String HALF_HEAD = "GET /v1/orders/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + Api.USER_KEY + "\r\n";

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_HTTP_REQUEST_READ_TIMEOUT_SECONDS", Integer.toString(BOUND_SECONDS));
  }

  private int port() {
    return service.config().http().port();
  }

  @Test
  void halfSentRequestsAreClosedAfterTheBoundWhileWholeOnesAreServed() throws Exception {
    double timeoutsBefore = Metrics.value(api, "ordertimeout_http_request_read_timeouts_total");
    List<RawHttp> halfSent = new ArrayList<>();
    long opened = System.nanoTime();
    for (int i = 0; i < HALF_SENT; i++) {
      halfSent.add(RawHttp.connect(port()).send(HALF_HEAD));
    }
    for (int i = 0; i < 20; i++) {
      assertThat(api.get("/health/live", null).status()).isEqualTo(200);
    }
    ExecutorService readers = Executors.newFixedThreadPool(32);
    try {
      List<CompletableFuture<String>> answers = halfSent.stream()
          .map(http -> CompletableFuture.supplyAsync(() -> http.readUntilClosed(60_000), readers)).toList();
      for (int i = 0; i < HALF_SENT; i++) {
        assertThat(answers.get(i).get()).as("nothing is answered to half a request").isEmpty();
        assertThat(halfSent.get(i).closedByServer()).isTrue();
      }
    } finally {
      readers.shutdownNow();
      halfSent.forEach(RawHttp::close);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - opened)).isGreaterThanOrEqualTo(Duration.ofSeconds(BOUND_SECONDS));
    assertThat(Metrics.value(api, "ordertimeout_http_request_read_timeouts_total") - timeoutsBefore).isGreaterThanOrEqualTo(HALF_SENT);
  }

  @Test
  void aRequestSentAByteAtATimeIsCutOff() {
    String request = RawHttp.request("GET", "/health/live", "X-Padding: " + "p".repeat(200));
    try (RawHttp http = RawHttp.connect(port())) {
      long started = System.nanoTime();
      boolean cut = false;
      for (int i = 0; i < request.length() && !cut; i++) {
        try {
          http.send(request.substring(i, i + 1));
          Await.sleep(50);
        } catch (RuntimeException closed) {
          cut = true;
        }
      }
      String answer = cut ? "" : http.readUntilClosed(30_000);
      assertThat(cut || http.closedByServer()).as("closed by the server").isTrue();
      assertThat(answer).as("sent in %d ms", (System.nanoTime() - started) / 1_000_000).isEmpty();
    }
  }

  @Test
  void aBodyThatStopsHalfwayIsClosedAfterTheBound() {
    try (RawHttp http = RawHttp.connect(port())) {
      http.send("POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + Api.USER_KEY
          + "\r\nIdempotency-Key: slow-body\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"userId\":");
      String answer = http.readUntilClosed(30_000);
      assertThat(http.closedByServer()).isTrue();
      assertThat(answer).doesNotContain("HTTP/1.1 201");
    }
  }

  @Test
  void aKeptAliveConnectionServesRequestsThenClosesWhenTheNextOneDoesNotCome() {
    try (RawHttp http = RawHttp.connect(port())) {
      for (int i = 0; i < 3; i++) {
        http.send(RawHttp.request("GET", "/health/live"));
        Await.sleep(BOUND_SECONDS * 1000L / 2);
      }
      String answers = http.readUntilClosed(30_000);
      assertThat(answers.split("HTTP/1.1 200 ", -1)).as(answers).hasSize(4);
      assertThat(http.closedByServer()).isTrue();
    }
  }
}
