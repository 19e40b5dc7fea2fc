package ordertimeout.http;

import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The deadlines' rules on a real event loop, with a length of 400 ms (checked every 20 ms). */
class SameLengthDeadlinesTest {
  private static final long LENGTH_MILLIS = 400;
  private static final long TICK_MILLIS = LENGTH_MILLIS / 20;

  private final Vertx vertx = Vertx.vertx();

  @AfterEach
  void close() {
    vertx.close().await();
  }

  private record Expiry(String name, long afterStartMillis) {}

  @Test
  void eachExpiresOnceInStartOrderNoEarlierThanATickBeforeItsLengthAndCancelledOnesNever() throws Exception {
    List<Expiry> expired = new CopyOnWriteArrayList<>();
    CountDownLatch twoExpired = new CountDownLatch(2);
    long[] startedNanos = new long[3];
    vertx.runOnContext(started -> {
      SameLengthDeadlines deadlines = new SameLengthDeadlines(vertx, LENGTH_MILLIS);
      String[] names = {"first", "cancelled", "restarted"};
      SameLengthDeadlines.Deadline[] running = new SameLengthDeadlines.Deadline[3];
      for (int i = 0; i < 3; i++) {
        int which = i;
        running[i] = deadlines.deadline(() -> {
          expired.add(new Expiry(names[which], TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos[which])));
          twoExpired.countDown();
        });
        startedNanos[i] = System.nanoTime();
        running[i].start();
      }
      running[1].cancel();
      vertx.setTimer(LENGTH_MILLIS / 2, half -> {
        startedNanos[2] = System.nanoTime();
        running[2].start();
      });
    });

    assertThat(twoExpired.await(10, TimeUnit.SECONDS)).as("expired: %s", expired).isTrue();
    Thread.sleep(LENGTH_MILLIS);
    System.out.printf("SameLengthDeadlinesTest: %s%n", expired);
    assertThat(expired).extracting(Expiry::name).containsExactly("first", "restarted");
    assertThat(expired).allSatisfy(expiry -> assertThat(expiry.afterStartMillis()).isGreaterThanOrEqualTo(LENGTH_MILLIS - TICK_MILLIS));
  }
}
