package ordertimeout.http;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import ordertimeout.config.AppConfig;
import ordertimeout.store.DatabaseSetup;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.OwnNode;
import ordertimeout.support.Ports;
import ordertimeout.support.TcpProxy;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Creates, pays and reads keep running while the node's PostgreSQL (its own, through a {@link TcpProxy}) has its
 * connections terminated ({@code pg_terminate_backend}: 57P01), is cut off for a few seconds, and is stopped with
 * {@code -m immediate} (SIGQUIT to the postmaster) and started again: every failed answer is 503
 * {@code database_unavailable} with Retry-After, never a 500, and the node serves again afterwards by itself.
 */
class DatabaseOutageTest {
  private static final Duration SAFETY = Duration.ofSeconds(120);
  private static final String SKU = "SKU-OUTAGE";
  private static final int CLIENTS = 4;

  @TempDir
  Path folder;

  private final Queue<Answer> answers = new ConcurrentLinkedQueue<>();
  private final AtomicInteger served = new AtomicInteger();
  private final AtomicLong unknown = new AtomicLong();

  private record Answer(String operation, int status, String code, boolean retryAfter) {}

  @Test
  void everyOutageAnswers503DatabaseUnavailableAndNever500() throws Exception {
    int postgresPort = Ports.free();
    Path data = folder.resolve("postgres");
    EmbeddedPostgres postgres = start(data, postgresPort);
    ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
    AtomicBoolean running = new AtomicBoolean(true);
    try (TcpProxy proxy = TcpProxy.to("127.0.0.1", postgresPort)) {
      String url = "postgresql://postgres:postgres@127.0.0.1:" + proxy.port() + "/postgres";
      DatabaseSetup database = DatabaseSetup.prepare(TestDatabase.databaseConfig(Map.of("OT_DATABASE_URL", url)));
      try (OwnNode node = OwnNode.start(Vertx.vertx(), database.connectOptions(), Map.of())) {
        Api api = node.api();
        api.setStock(SKU, 10_000_000);
        List<String> unpaid = new ArrayList<>(api.createOrders(200, 3600, SKU));
        for (int client = 0; client < CLIENTS; client++) {
          int first = client;
          clients.submit(() -> load(api, unpaid, first, running));
        }
        awaitServed("before any outage");

        terminateBackends(postgresPort);
        awaitServed("after pg_terminate_backend");

        proxy.cut();
        Await.sleep(3_000);
        proxy.restore();
        awaitServed("after the cut");

        Files.readAllLines(data.resolve("postmaster.pid")).get(0).transform(pid -> signal("QUIT", pid));
        Await.sleep(2_000);
        postgres.close();
        postgres = start(data, postgresPort);
        awaitServed("after the immediate restart");

        running.set(false);
        clients.shutdown();
        assertThat(clients.awaitTermination(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      }
    } finally {
      running.set(false);
      clients.shutdownNow();
      postgres.close();
    }
    Map<String, Integer> byAnswer = new TreeMap<>();
    answers.forEach(answer -> byAnswer.merge(answer.operation() + " " + answer.status() + " " + answer.code(), 1, Integer::sum));
    System.out.printf("DatabaseOutageTest: %s; %d requests without an answer%n", byAnswer, unknown.get());

    assertThat(answers).as(byAnswer.toString()).noneMatch(answer -> answer.status() >= 500 && answer.status() != 503);
    List<Answer> unavailable = answers.stream().filter(answer -> answer.status() == 503).toList();
    assertThat(unavailable).as("the outages were seen").isNotEmpty();
    assertThat(unavailable).allMatch(answer -> "database_unavailable".equals(answer.code()) && answer.retryAfter(), "database_unavailable with Retry-After");
  }

  /** Round robin of a create, a pay of an order made before, and a read, until told to stop. */
  private void load(Api api, List<String> unpaid, int client, AtomicBoolean running) {
    for (int i = client; running.get(); i++) {
      String orderId = unpaid.get((i * CLIENTS + client) % unpaid.size());
      try {
        switch (i % 3) {
          case 0 -> record("create", api.createOrder(UUID.randomUUID().toString(),
              new JsonObject().put("userId", "u-" + client).put("items", List.of(Map.of("sku", SKU, "qty", 1)))));
          case 1 -> record("pay", api.pay(orderId));
          default -> record("read", api.order(orderId));
        }
      } catch (RuntimeException noAnswer) {
        unknown.incrementAndGet();
        Await.sleep(50);
      }
    }
  }

  private void record(String operation, Api.Response response) {
    String code = response.contentType().startsWith("application/problem+json") ? response.code() : "";
    answers.add(new Answer(operation, response.status(), code, response.raw().headers().firstValue("Retry-After").isPresent()));
    if (response.status() < 500) {
      served.incrementAndGet();
    }
  }

  private void awaitServed(String when) {
    int before = served.get();
    Await.until("creates, pays and reads served " + when, SAFETY, () -> served.get() >= before + 30);
  }

  private static EmbeddedPostgres start(Path data, int port) {
    try {
      return EmbeddedPostgres.builder().setDataDirectory(data).setCleanDataDirectory(false).setPort(port)
          .setPgBinaryResolver(DatabaseSetup.BUNDLED_BINARIES).start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every client backend but this one gets 57P01, as from pg_ctl stop -m fast. */
  private static void terminateBackends(int port) throws SQLException {
    try (Connection connection = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres", "postgres", "postgres");
         Statement statement = connection.createStatement()) {
      statement.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
          + "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
    }
  }

  /** SIGQUIT to the postmaster is what pg_ctl stop -m immediate sends. */
  private static int signal(String signal, String pid) {
    try {
      return new ProcessBuilder("kill", "-" + signal, pid.trim()).inheritIO().start().waitFor();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
