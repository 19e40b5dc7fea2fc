package ordertimeout.redis;

import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import ordertimeout.config.AppConfig;
import ordertimeout.support.TestRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static ordertimeout.support.TestService.await;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A connection whose server stopped acknowledging ends after {@value RedisClient#UNACKNOWLEDGED_MILLIS} ms (the
 * kernel's TCP_USER_TIMEOUT) rather than when TCP gives up. On loopback a server that vanished is played by one stopped
 * (SIGSTOP) whose socket buffers are full: its kernel answers the window probes but takes nothing more, which the
 * same timeout ends. On the native transport, as a node runs.
 */
class RedisClientConnectionsTest {
  private static final int VALUE_BYTES = 1 << 20;
  /** More than loopback's socket buffers on both ends hold. */
  private static final int VALUES = 64;

  private TestRedis server;
  private Vertx vertx;

  @BeforeEach
  void start() {
    server = TestRedis.start();
    vertx = Vertx.vertx(new VertxOptions().setPreferNativeTransport(true));
  }

  @AfterEach
  void stop() {
    try {
      server.thaw();
    } finally {
      try {
        await(vertx.close());
      } finally {
        server.close();
      }
    }
  }

  @Test
  void aConnectionToAServerThatTakesNothingMoreEndsAfterTheUnacknowledgedTime() throws Exception {
    assertThat(vertx.isNativeTransportEnabled()).as("TCP_USER_TIMEOUT needs the native transport").isTrue();
    RedisClient client = new RedisClient(vertx,
        new AppConfig.Redis(server.url(), "ot", 5000, AppConfig.WhenUnreachable.LOCAL, 30));
    RedisConnection connection = await(client.current().connect());
    Promise<Void> ended = Promise.promise();
    connection.exceptionHandler(failure -> ended.tryComplete());
    connection.endHandler(end -> ended.tryComplete());
    assertThat(await(connection.send(Request.cmd(Command.PING))).toString()).isEqualTo("PONG");

    server.freeze();
    long frozeNanos = System.nanoTime();
    Buffer value = Buffer.buffer(new byte[VALUE_BYTES]);
    vertx.runOnContext(send -> {
      for (int i = 0; i < VALUES; i++) {
        connection.send(Request.cmd(Command.SET).arg("k" + i).arg(value));
      }
    });

    ended.future().toCompletionStage().toCompletableFuture()
        .get(RedisClient.UNACKNOWLEDGED_MILLIS + 20_000, TimeUnit.MILLISECONDS);
    long endedAfterMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - frozeNanos);
    System.out.printf("RedisClientConnectionsTest: the connection ended %d ms after the server stopped%n",
        endedAfterMillis);
    assertThat(endedAfterMillis).isGreaterThanOrEqualTo(RedisClient.UNACKNOWLEDGED_MILLIS);
  }
}
