package ordertimeout.http;

import ordertimeout.metrics.Meters;
import ordertimeout.support.Await;
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

/** Past {@code http.maxConnections} a new connection is closed as soon as it opens, and counted; below it again, requests are served. */
class ConnectionCapTest extends ServiceTestBase {
  private static final int CAP = 20;
  private static final int EXTRA = 5;

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_HTTP_MAX_CONNECTIONS", Integer.toString(CAP));
  }

  @Test
  void connectionsOverTheCapAreClosedAtOnce() throws Exception {
    double refusedBefore = refused();
    List<RawHttp> connections = new ArrayList<>();
    for (int i = 0; i < CAP + EXTRA; i++) {
      connections.add(RawHttp.connect(service.config().http().port()).send("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    }
    ExecutorService readers = Executors.newFixedThreadPool(CAP + EXTRA);
    int closed = 0;
    try {
      // the request read deadline is 30 s: within 5 s only the connections over the cap are closed
      List<CompletableFuture<Boolean>> closedAtOnce = connections.stream()
          .map(http -> CompletableFuture.supplyAsync(() -> {
            http.readUntilClosed(5_000);
            return http.closedByServer();
          }, readers)).toList();
      for (CompletableFuture<Boolean> each : closedAtOnce) {
        closed += each.get() ? 1 : 0;
      }
    } finally {
      readers.shutdownNow();
    }
    assertThat(closed).isGreaterThanOrEqualTo(EXTRA);
    assertThat(refused() - refusedBefore).isEqualTo(closed);

    connections.forEach(RawHttp::close);
    Await.until("the connections closed by the client are no longer counted", Duration.ofSeconds(30),
        () -> openConnections() == 0);
    assertThat(api.get("/health/live", null).status()).isEqualTo(200);
  }

  private double refused() {
    return service.service().registry().get(Meters.HTTP_CONNECTIONS_REFUSED).counter().count();
  }

  private double openConnections() {
    return service.service().registry().get(Meters.HTTP_CONNECTIONS_OPEN).gauge().value();
  }
}
