package ordertimeout.http;

import ordertimeout.support.ServiceTestBase;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Shops' backends calling with the JDK's HttpClient as it comes, which asks each new connection for an upgrade to
 * HTTP/2 over cleartext. When the service took the upgrade, now and then a new connection never got its 30 KB
 * /metrics answer (the client's own request timeout did not fire either), and some clients misread the frames
 * ("Frame type(110) length(6449505) exceeds MAX_FRAME_SIZE"). The service answers them on HTTP/1.1 instead.
 */
class HttpProtocolTest extends ServiceTestBase {
  @Test
  void defaultJdkClientsGetEveryAnswer() throws Exception {
    HttpRequest scrape = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + service.config().http().port() + "/metrics"))
        .timeout(Duration.ofSeconds(10)).build();
    Set<HttpClient.Version> versions = EnumSet.noneOf(HttpClient.Version.class);
    for (int client = 0; client < 30; client++) {
      HttpClient defaultClient = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      for (int request = 0; request < 3; request++) {
        HttpResponse<String> response =
            defaultClient.sendAsync(scrape, HttpResponse.BodyHandlers.ofString()).get(15, TimeUnit.SECONDS);
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).as("client %d, answer %d, whole", client, request)
            .contains("# TYPE").endsWith("\n").hasSizeGreaterThan(20_000);
        versions.add(response.version());
      }
    }
    assertThat(versions).containsOnly(HttpClient.Version.HTTP_1_1);
  }
}
