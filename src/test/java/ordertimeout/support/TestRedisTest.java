package ordertimeout.support;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The test Redis itself: a server a test froze and left so still ends at once. */
class TestRedisTest {
  @Test
  void aFrozenServerIsEndedWithoutWaitingForTheForcedKill() {
    TestRedis server = TestRedis.start();
    server.freeze();
    long started = System.nanoTime();
    server.close();
    // a SIGTERM left pending on the stopped process waits 10 s for the forced kill
    assertThat((System.nanoTime() - started) / 1_000_000).as("ms to end it").isLessThan(5000);
    assertThat(server.isRunning()).isFalse();
  }
}
