package ordertimeout.redis;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import ordertimeout.config.AppConfig;
import ordertimeout.support.Await;
import ordertimeout.support.TestRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;

import static ordertimeout.support.TestService.await;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A failover behind one host name leaves the pooled connections on the old server, now a replica: the client is
 * built again after its READONLY reply, so that its old connections close and new ones are opened. Three timeouts of
 * separate tries do the same; an outage rebuilds it at most once every {@value RedisClient#SECONDS_BETWEEN_REBUILDS} s.
 */
class RedisClientRebuildTest {
  private TestRedis server;
  private TestRedis newPrimary;
  private Vertx vertx;

  @BeforeEach
  void start() {
    server = TestRedis.start();
    newPrimary = TestRedis.start();
    vertx = Vertx.vertx();
  }

  @AfterEach
  void stop() {
    await(vertx.close());
    server.close();
    newPrimary.close();
  }

  @Test
  void aReadonlyReplyClosesThePooledConnectionsAndTheNextCallsGoOnNewOnes() {
    // a slow answer on a loaded machine is not an outage
    RedisClient client = new RedisClient(vertx,
        new AppConfig.Redis(server.url(), "ot", 5000, AppConfig.WhenUnreachable.LOCAL, 30));
    long connection = await(client.send(Request.cmd(Command.CLIENT).arg("ID"))).toLong();
    assertThat(server.command("CLIENT LIST ID " + connection)).as("the pooled connection").contains("id=" + connection);

    assertThat(server.command("REPLICAOF 127.0.0.1 " + newPrimary.port())).isEqualTo("+OK");
    Throwable refused = client.send(Request.cmd(Command.SET).arg("k").arg("v")).toCompletionStage()
        .handle((ok, failure) -> failure).toCompletableFuture().join();
    assertThat(refused).as("a write on a replica").isNotNull();
    assertThat(refused.getMessage()).containsAnyOf("READONLY", "LOADING", "MASTERDOWN");
    assertThat(client.rebuilds()).isEqualTo(1);

    assertThat(server.command("REPLICAOF NO ONE")).isEqualTo("+OK");
    Await.until("the old connection closed", Duration.ofSeconds(10),
        () -> server.command("CLIENT LIST ID " + connection).isEmpty());
    assertThat(await(client.send(Request.cmd(Command.SET).arg("k").arg("v"))).toString()).isEqualTo("OK");
  }

  @Test
  void aSecondNotServingReplyWithinTheTimeBetweenRebuildsDoesNotRebuildAgain() {
    RedisClient client = new RedisClient(vertx, settings(5000));
    assertThat(server.command("REPLICAOF 127.0.0.1 " + newPrimary.port())).isEqualTo("+OK");
    for (int i = 0; i < 2; i++) {
      Throwable refused = failureOf(client.send(Request.cmd(Command.SET).arg("k").arg("v")));
      assertThat(refused.getMessage()).containsAnyOf("READONLY", "LOADING", "MASTERDOWN");
    }
    assertThat(client.rebuilds()).as("rebuilt after the first reply only").isEqualTo(1);
  }

  @Test
  void threeTimeoutsOfSeparateTriesCloseThePooledConnectionsToo() {
    RedisClient client = new RedisClient(vertx, settings(1000), Duration.ZERO);
    long connection = await(client.send(Request.cmd(Command.CLIENT).arg("ID"))).toLong();
    assertThat(server.command("CLIENT PAUSE 5000 ALL")).isEqualTo("+OK");
    for (int i = 0; i < RedisClient.TIMEOUTS_BEFORE_REBUILD; i++) {
      assertThat(failureOf(client.send(Request.cmd(Command.PING)))).as("past the 1000 ms bound")
          .isInstanceOf(TimeoutException.class);
    }
    assertThat(client.rebuilds()).isEqualTo(1);
    Await.until("the old connection closed once the pause is over", Duration.ofSeconds(15),
        () -> server.command("CLIENT LIST ID " + connection).isEmpty());
    assertThat(await(client.send(Request.cmd(Command.PING))).toString()).isEqualTo("PONG");
  }

  /** Its connections are still being opened (or Redis was away from the start): there is nothing stale to drop. */
  @Test
  void timeoutsOnAClientThatHasNotAnsweredYetDoNotRebuild() {
    // far longer than the three timeouts on a slow machine: the server is ended after the test
    assertThat(server.command("CLIENT PAUSE 60000 ALL")).isEqualTo("+OK");
    RedisClient client = new RedisClient(vertx, settings(1000), Duration.ZERO);
    for (int i = 0; i < RedisClient.TIMEOUTS_BEFORE_REBUILD; i++) {
      assertThat(failureOf(client.send(Request.cmd(Command.PING)))).as("past the 1000 ms bound, separate tries")
          .isInstanceOf(TimeoutException.class);
    }
    assertThat(client.rebuilds()).isZero();
  }

  /** A hiccup that times out many pipelined calls at once is one try, not three. */
  @Test
  void timeoutsOfCallsSentTogetherDoNotRebuild() {
    RedisClient client = new RedisClient(vertx, settings(1000), Duration.ZERO);
    await(client.send(Request.cmd(Command.PING)));
    assertThat(server.command("CLIENT PAUSE 3000 ALL")).isEqualTo("+OK");
    List<Future<Response>> together = new ArrayList<>();
    for (int i = 0; i < 2 * RedisClient.TIMEOUTS_BEFORE_REBUILD; i++) {
      together.add(client.send(Request.cmd(Command.PING)));
    }
    together.forEach(call -> assertThat(failureOf(call)).isInstanceOf(TimeoutException.class));
    assertThat(client.rebuilds()).isZero();
  }

  @Test
  void aNotServingReplyAfterCloseBuildsNoClient() {
    RedisClient client = new RedisClient(vertx, settings(5000), Duration.ZERO);
    Redis used = client.current();
    await(client.close());
    Throwable lateReply = failureOf(client.bounded(used,
        Future.failedFuture(new IllegalStateException("READONLY You can't write against a read only replica."))));
    assertThat(lateReply).hasMessageStartingWith("READONLY");
    assertThat(client.current()).isSameAs(used);
    assertThat(client.rebuilds()).isZero();
  }

  private AppConfig.Redis settings(int timeoutMillis) {
    return new AppConfig.Redis(server.url(), "ot", timeoutMillis, AppConfig.WhenUnreachable.LOCAL, 30);
  }

  private static Throwable failureOf(Future<?> call) {
    return call.toCompletionStage().handle((ok, failure) -> failure).toCompletableFuture().join();
  }
}
