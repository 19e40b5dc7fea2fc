package ordertimeout.maintenance;

import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.redis.RedisClient;
import ordertimeout.support.Await;
import ordertimeout.support.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.UUID;

import static ordertimeout.support.TestService.await;
import static org.assertj.core.api.Assertions.assertThat;

/** The lock against a real Redis: SET NX PX with a token, renewed and released by compare-then-act scripts. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JobLockTest {
  private static final long LEASE_MILLIS = 3_000;
  private TestRedis server;
  private Vertx vertx;
  private RedisClient client;
  private AppConfig.Redis config;

  @BeforeAll
  void start() {
    server = TestRedis.start();
    vertx = Vertx.vertx();
    // a slow answer on a loaded machine is not an outage: every call here must reach Redis
    config = new AppConfig.Redis(server.url(), "ot", 5000, AppConfig.WhenUnreachable.LOCAL, 30);
    client = new RedisClient(vertx, config);
  }

  @AfterAll
  void stop() {
    await(vertx.close());
    server.close();
  }

  private JobLock lock(String key, String token) {
    return new JobLock(client, key, token);
  }

  @Test
  void excludesASecondHolderUntilTheFirstReleases() {
    String key = "ot:lock:" + UUID.randomUUID();
    JobLock a = lock(key, "node-1-a");
    JobLock b = lock(key, "node-2-b");
    assertThat(await(a.tryAcquire(60_000))).isTrue();
    assertThat(await(b.tryAcquire(60_000))).as("held by a").isFalse();
    assertThat(await(a.tryAcquire(60_000))).as("not reentrant: a second take by the holder fails too").isFalse();
    assertThat(await(b.holder())).isEqualTo("node-1-a");
    assertThat(await(a.release())).isTrue();
    assertThat(await(b.tryAcquire(60_000))).isTrue();
    assertThat(await(a.holder())).isEqualTo("node-2-b");
  }

  @Test
  void onlyTheOwnersTokenReleasesOrRenewsIt() {
    String key = "ot:lock:" + UUID.randomUUID();
    JobLock owner = lock(key, "node-1-owner");
    JobLock other = lock(key, "node-2-other");
    assertThat(await(owner.tryAcquire(60_000))).isTrue();
    assertThat(await(other.release())).as("another token deletes nothing").isFalse();
    assertThat(await(other.renew(600_000))).as("nor extends it").isFalse();
    assertThat(server.command("GET " + key)).isEqualTo("node-1-owner");
    assertThat(ttl(key)).isBetween(1L, 60_000L);

    assertThat(await(owner.renew(600_000))).isTrue();
    assertThat(ttl(key)).as("renewed by its owner").isGreaterThan(60_000L);
    assertThat(await(owner.release())).isTrue();
    assertThat(server.command("EXISTS " + key)).isEqualTo(":0");
    assertThat(await(owner.release())).as("releasing twice is harmless").isFalse();
  }

  @Test
  void expiresByItselfAfterItsLeaseSoADeadHolderDoesNotBlockTheOthers() {
    String key = "ot:lock:" + UUID.randomUUID();
    JobLock dead = lock(key, "node-1-dead");
    JobLock next = lock(key, "node-2-next");
    // a lease the checks right after the take cannot outlive on a loaded machine (300 ms could: PTTL then answered -2)
    assertThat(await(dead.tryAcquire(LEASE_MILLIS))).isTrue();
    assertThat(ttl(key)).as("a lease of %d ms", LEASE_MILLIS).isBetween(1L, LEASE_MILLIS);
    assertThat(await(next.tryAcquire(60_000))).as("held by the dead holder until its lease runs out").isFalse();
    Await.until("taken after the lease ran out", Duration.ofSeconds(30), () -> await(next.tryAcquire(60_000)));
    assertThat(await(dead.renew(60_000))).as("the old holder cannot renew what it lost").isFalse();
    assertThat(await(dead.release())).as("nor delete the new holder's lock").isFalse();
    assertThat(await(next.holder())).isEqualTo("node-2-next");
  }

  private long ttl(String key) {
    return Long.parseLong(server.command("PTTL " + key).substring(1));
  }

}
