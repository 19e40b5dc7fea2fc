package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Apt;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.TempFolders;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The operator dashboard: its two admin routes, the static page, and the page itself rendered by a
 * real headless Chromium (Debian's, installed here when missing) against the running service.
 */
class DashboardTest extends ServiceTestBase {
  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Duration CHROMIUM_TIMEOUT = Duration.ofSeconds(90);
  private static final Pattern ALARM = Pattern.compile("ordertimeout_alarm\\{[^}]*code=\"([A-Z_0-9]+)\"");

  private int port() {
    return service.config().http().port();
  }

  /** Three orders closed by timeout, one cancelled, two still pending; returns their ids by role. */
  private Map<String, List<String>> someCloses() {
    api.setStock("SKU-D", 1_000);
    List<String> timedOut = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      timedOut.add(create("u-" + i, 1, "SKU-D", 1 + i).getString("id"));
    }
    String cancelled = create("u-c", 600, "SKU-D", 2).getString("id");
    assertThat(api.cancel(cancelled).status()).isEqualTo(200);
    List<String> pending = List.of(create("u-p", 600, "SKU-D", 1).getString("id"), create("u-q", 900, "SKU-D", 3).getString("id"));
    for (String id : timedOut) {
      Await.until("order " + id + " closed by timeout", Duration.ofSeconds(30), () -> "CLOSED".equals(statusOf(id)));
    }
    return Map.of("timedOut", timedOut, "cancelled", List.of(cancelled), "pending", pending);
  }

  @Test
  void latestClosesNewestFirstWithReasonAndLateness() {
    Map<String, List<String>> ids = someCloses();
    Api.Response response = api.get("/v1/admin/closes?limit=20", Api.ADMIN_KEY);
    assertThat(response.status()).isEqualTo(200);
    assertThat(response.contentType()).startsWith("application/json");
    JsonArray closes = new JsonArray(response.body());
    assertThat(closes).hasSize(4);
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < closes.size(); i++) {
      JsonObject close = closes.getJsonObject(i);
      assertThat(close.fieldNames()).containsExactlyInAnyOrder("orderId", "reason", "closeAt", "closedAt", "latenessMillis");
      seen.add(close.getString("orderId"));
      if (ids.get("timedOut").contains(close.getString("orderId"))) {
        assertThat(close.getString("reason")).isEqualTo("TIMEOUT");
        assertThat(close.getLong("latenessMillis")).isGreaterThanOrEqualTo(0L);
      } else {
        assertThat(close.getString("reason")).isEqualTo("USER_CANCELLED");
        assertThat(close.getString("orderId")).isEqualTo(ids.get("cancelled").get(0));
      }
    }
    assertThat(seen).containsAll(ids.get("timedOut")).containsAll(ids.get("cancelled"));
    // the cancel happened before the timeouts: it is the oldest close, listed last
    assertThat(closes.getJsonObject(3).getString("orderId")).isEqualTo(ids.get("cancelled").get(0));

    assertThat(new JsonArray(api.get("/v1/admin/closes?limit=2", Api.ADMIN_KEY).body())).hasSize(2);
    assertThat(new JsonArray(api.get("/v1/admin/closes", Api.ADMIN_KEY).body())).hasSize(4);
    for (String bad : List.of("0", "201", "-1", "abc", "1.5", "", "99999999999")) {
      Api.Response refused = api.get("/v1/admin/closes?limit=" + bad, Api.ADMIN_KEY);
      assertThat(refused.status()).as(bad).isEqualTo(400);
      assertThat(refused.contentType()).startsWith("application/problem+json");
      assertThat(refused.code()).isEqualTo("invalid_field");
    }
    assertThat(api.get("/v1/admin/closes?limit=200", Api.ADMIN_KEY).status()).isEqualTo(200);
    assertThat(api.get("/v1/admin/closes?limit=1", Api.ADMIN_KEY).status()).isEqualTo(200);
  }

  @Test
  void orderLogInWritingOrder() {
    Map<String, List<String>> ids = someCloses();
    String timedOut = ids.get("timedOut").get(0);
    Api.Response response = api.get("/v1/admin/orders/" + timedOut + "/log", Api.ADMIN_KEY);
    assertThat(response.status()).isEqualTo(200);
    JsonArray log = new JsonArray(response.body());
    assertThat(log).hasSize(2);
    assertThat(log.getJsonObject(0).fieldNames()).containsExactlyInAnyOrder("event", "detail", "at");
    assertThat(log.getJsonObject(0).getString("event")).isEqualTo("CREATED");
    assertThat(log.getJsonObject(1).getString("event")).isEqualTo("CLOSED");
    assertThat(log.getJsonObject(1).getString("detail")).isEqualTo("TIMEOUT");
    assertThat(log.getJsonObject(1).getString("at")).endsWith("Z");

    JsonArray pendingLog = new JsonArray(api.get("/v1/admin/orders/" + ids.get("pending").get(0) + "/log", Api.ADMIN_KEY).body());
    assertThat(pendingLog).hasSize(1);
    assertThat(pendingLog.getJsonObject(0).getString("event")).isEqualTo("CREATED");

    Api.Response missing = api.get("/v1/admin/orders/12345/log", Api.ADMIN_KEY);
    assertThat(missing.status()).isEqualTo(404);
    assertThat(missing.code()).isEqualTo("order_not_found");
    for (String bad : List.of("abc", "99999999999999999999", "-5")) {
      Api.Response refused = api.get("/v1/admin/orders/" + bad + "/log", Api.ADMIN_KEY);
      assertThat(refused.status()).as(bad).isEqualTo(400);
      assertThat(refused.code()).isEqualTo("invalid_order_id");
    }
  }

  @Test
  void adminRoutesRefuseUserKeysAndTheStaticPageNeedsNone() {
    for (String path : List.of("/v1/admin/closes", "/v1/admin/closes?limit=5", "/v1/admin/orders/1/log")) {
      Api.Response user = api.get(path, Api.USER_KEY);
      assertThat(user.status()).as(path).isEqualTo(403);
      assertThat(user.code()).isEqualTo("forbidden");
      assertThat(api.get(path, null).status()).as(path).isEqualTo(401);
    }
    Api.Response redirect = api.get("/dashboard", null);
    assertThat(redirect.status()).isEqualTo(301);
    assertThat(redirect.raw().headers().firstValue("Location")).hasValue("/dashboard/");
    Api.Response page = api.get("/dashboard/", null);
    assertThat(page.status()).isEqualTo(200);
    assertThat(page.contentType()).startsWith("text/html");
    assertThat(page.body()).contains("dashboard.js", "dashboard.css").doesNotContain("http://", "https://");
    Api.Response script = api.get("/dashboard/dashboard.js", null);
    assertThat(script.status()).isEqualTo(200);
    assertThat(script.body()).contains("sessionStorage").doesNotContain("https://");
    assertThat(api.get("/dashboard/dashboard.css", null).status()).isEqualTo(200);
    assertThat(api.get("/dashboard/nothing.js", null).status()).isEqualTo(404);
  }

  @Test
  void headlessChromiumShowsWhatTheApiSays() throws Exception {
    Path chromium = ensureChromium();
    Map<String, List<String>> ids = someCloses();
    String searched = ids.get("timedOut").get(1);
    // let every counter settle: all closes counted, pending timers stable
    Await.until("three timeout closes counted", Duration.ofSeconds(30),
        () -> api.stats().getJsonObject("closesByReason").getLong("TIMEOUT") >= 3);
    Thread.sleep(500);

    // a bulk job, for the job list
    String bulkClosed = api.createOrders(1, 600, "SKU-D").get(0);
    Api.Response submitted = api.send(api.request("POST", "/v1/admin/orders/bulk-close", Api.ADMIN_KEY,
        new JsonObject().put("ids", new JsonArray().add(bulkClosed)).encode()));
    assertThat(submitted.status()).as(submitted.body()).isEqualTo(202);
    String jobId = submitted.json().getString("id");
    Await.until("the bulk job finished", Duration.ofSeconds(30),
        () -> "SUCCEEDED".equals(api.get("/v1/admin/jobs/" + jobId, Api.ADMIN_KEY).json().getString("status")));

    String url = "http://127.0.0.1:" + port() + "/dashboard/#key=" + Api.ADMIN_KEY + "&order=" + searched;
    Path target = Path.of("target").toAbsolutePath();
    Files.createDirectories(target);
    Path dom = target.resolve("dashboard-dom.html");
    runChromium(chromium, List.of("--dump-dom", url), dom, target.resolve("chromium-dump-dom.log"));
    String html = Files.readString(dom, StandardCharsets.UTF_8);

    JsonObject stats = api.stats();
    String metrics = api.get("/metrics", null).body();
    assertThat(html.contains("id=\"board\"") && !html.contains("id=\"board\" hidden"))
        .as("the dashboard rendered its board; the dumped DOM is in " + dom + ", it begins: "
            + html.substring(0, Math.min(600, html.length())))
        .isTrue();
    JsonObject byReason = stats.getJsonObject("closesByReason");
    for (String reason : List.of("TIMEOUT", "USER_CANCELLED", "ADMIN")) {
      assertThat(number(html, "closes-" + reason)).as(reason).isEqualTo(byReason.getLong(reason));
    }
    // the node's counters live as long as the service, which the other tests of this class share
    assertThat(byReason.getLong("TIMEOUT")).isGreaterThanOrEqualTo(3);
    assertThat(number(html, "closes-total")).isEqualTo(byReason.getLong("TIMEOUT") + byReason.getLong("USER_CANCELLED")
        + byReason.getLong("ADMIN"));
    assertThat(number(html, "pending-total")).isEqualTo(stats.getJsonObject("pendingTimers").getLong("total"));
    assertThat(stats.getJsonObject("pendingTimers").getLong("total")).isPositive();
    assertThat(number(html, "lateness-count")).isEqualTo(stats.getJsonObject("latenessMillis").getLong("count"));
    assertThat(count(html, "class=\"shard\"")).isEqualTo(stats.getJsonObject("pendingTimers").getJsonArray("byShard").size());

    // the latest closes: every order closed here, with its reason
    Set<String> listed = new HashSet<>();
    Matcher row = Pattern.compile("<tr data-order-id=\"(\\d+)\" data-reason=\"([A-Z_]+)\"").matcher(html);
    while (row.find()) {
      listed.add(row.group(1) + ":" + row.group(2));
    }
    for (String id : ids.get("timedOut")) {
      assertThat(listed).contains(id + ":TIMEOUT");
    }
    assertThat(listed).contains(ids.get("cancelled").get(0) + ":USER_CANCELLED");

    // the histogram: its bars add up to the timer's count in /metrics
    long bars = 0;
    Matcher bar = Pattern.compile("class=\"bar\" data-le=\"[^\"]+\" data-count=\"(\\d+)\"").matcher(html);
    while (bar.find()) {
      bars += Long.parseLong(bar.group(1));
    }
    Matcher timerCount = Pattern.compile("(?m)^ordertimeout_close_lateness_seconds_count(?:\\{[^}]*})? (\\S+)$").matcher(metrics);
    assertThat(timerCount.find()).as("lateness count in /metrics").isTrue();
    assertThat(bars).isEqualTo((long) Double.parseDouble(timerCount.group(1))).isGreaterThanOrEqualTo(3);

    // every alarm gauge is shown, green or red
    Matcher alarm = ALARM.matcher(metrics);
    int alarms = 0;
    while (alarm.find()) {
      alarms++;
      assertThat(html).containsPattern("id=\"alarm-" + alarm.group(1) + "\" class=\"(ok|firing)\" data-state=\"(OK|FIRING)\"");
    }
    assertThat(alarms).isPositive();

    // the order searched from the fragment, with its log
    assertThat(html).contains("id=\"order-detail\" data-order-id=\"" + searched + "\"");
    assertThat(html).containsPattern("id=\"order-status\"[^>]*>CLOSED<");
    assertThat(html).contains("data-event=\"CREATED\"", "data-event=\"CLOSED\"");
    // the bulk jobs, with their progress
    assertThat(html).containsPattern("<tr data-job=\"" + jobId + "\"[^>]*>.*?tag-SUCCEEDED\">SUCCEEDED<.*?>1 / 1<");
    // the key came from the fragment and is not left in the page
    assertThat(html).doesNotContain(Api.ADMIN_KEY);

    Path png = target.resolve("dashboard.png");
    Files.deleteIfExists(png);
    runChromium(chromium, List.of("--screenshot=" + png, url), target.resolve("chromium-screenshot.out"),
        target.resolve("chromium-screenshot.log"));
    assertThat(png).exists();
    byte[] bytes = Files.readAllBytes(png);
    assertThat(bytes.length).as("screenshot size").isGreaterThan(20_000);
    assertThat(new byte[] {bytes[0], bytes[1], bytes[2], bytes[3]}).isEqualTo(new byte[] {(byte) 0x89, 'P', 'N', 'G'});
  }

  /** The text of the element with this id, as a number (thousands separators dropped). */
  private static long number(String html, String id) {
    Matcher matcher = Pattern.compile("id=\"" + Pattern.quote(id) + "\"[^>]*>([^<]*)<").matcher(html);
    if (!matcher.find()) {
      fail("no element #" + id + " in the dumped DOM");
    }
    String text = matcher.group(1).replace(",", "").trim();
    if (!text.matches("-?\\d+")) {
      fail("#" + id + " shows '" + text + "', not a number");
    }
    return Long.parseLong(text);
  }

  private static int count(String html, String needle) {
    int n = 0;
    for (int at = html.indexOf(needle); at >= 0; at = html.indexOf(needle, at + 1)) {
      n++;
    }
    return n;
  }

  private static void runChromium(Path chromium, List<String> action, Path stdout, Path stderr) throws Exception {
    Path profile = TempFolders.create("ot-dashboard-chromium");
    List<String> command = new ArrayList<>(List.of(chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-dev-shm-usage", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--user-data-dir=" + profile, "--window-size=1440,900",
        "--hide-scrollbars", "--virtual-time-budget=10000"));
    command.addAll(action);
    Process process = new ProcessBuilder(command).redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
    try {
      if (!process.waitFor(CHROMIUM_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
        kill(process);
        fail("chromium did not finish within " + CHROMIUM_TIMEOUT + "; its output is in " + stderr);
      }
      assertThat(process.exitValue()).as("chromium's exit status; its output is in " + stderr).isZero();
    } finally {
      if (process.isAlive()) {
        kill(process);
      }
      TempFolders.delete(profile);
    }
  }

  /** Only this chromium and its own children, by pid. */
  private static void kill(Process process) throws InterruptedException {
    List<ProcessHandle> children = process.descendants().toList();
    process.destroyForcibly();
    children.forEach(ProcessHandle::destroyForcibly);
    process.waitFor(10, TimeUnit.SECONDS);
  }

  /** Debian's chromium: there already, or installed with apt-get (apt-get update first if the install fails). */
  private static Path ensureChromium() {
    if (!Files.isExecutable(CHROMIUM)) {
      Apt.install("chromium");
    }
    assertThat(CHROMIUM).as("Debian's chromium, installed by apt-get").isExecutable();
    return CHROMIUM;
  }
}
