package ordertimeout.support;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * The local profile's dependencies on one machine with nothing but a JDK and Maven: PostgreSQL on
 * 127.0.0.1:5432 (postgres/postgres), a Kafka broker on 127.0.0.1:9092 and Redis on 127.0.0.1:6379,
 * from the same Maven artifacts the tests use, with their data under ./data/local-stack. Runs until
 * Ctrl-C, then stops all three. Started with:
 * {@code mvn -q test-compile exec:java -Dexec.classpathScope=test -Dmain.class=ordertimeout.support.LocalStack}
 */
public final class LocalStack {
  private LocalStack() {}

  public static void main(String[] args) throws IOException, InterruptedException {
    Path home = Path.of("data", "local-stack").toAbsolutePath();
    Path pgData = Files.createDirectories(home.resolve("postgres"));
    EmbeddedPostgres postgres = EmbeddedPostgres.builder()
        .setPort(5432)
        .setDataDirectory(pgData)
        .setCleanDataDirectory(false)
        .setServerConfig("max_connections", "300")
        .setServerConfig("track_activity_query_size", "16384")
        .start();
    KafkaBroker kafka;
    TestRedis redis;
    try {
      kafka = KafkaBroker.startAt(home.resolve("kafka"), 9092, 9093);
      redis = TestRedis.startOn(6379, home.resolve("redis"));
    } catch (RuntimeException e) {
      postgres.close();
      throw e;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      redis.close();
      kafka.close();
      try {
        postgres.close();
      } catch (IOException e) {
        System.err.println("stopping PostgreSQL: " + e);
      }
      stopped.countDown();
    }, "stop-local-stack"));
    System.out.printf("local stack up (data in %s): PostgreSQL postgresql://postgres:postgres@127.0.0.1:%d/postgres, "
        + "Kafka %s, Redis %s; Ctrl-C stops it%n", home, postgres.getPort(), kafka.bootstrapServers(), redis.url());
    stopped.await();
  }
}
