package ordertimeout.http;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import ordertimeout.metrics.Meters;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Whether the node is draining (from SIGTERM on): then it is not ready, refuses new orders with 503 {@code draining}
 * and ends each keep-alive connection after its answer; and how long what is in flight may still take.
 */
public final class Draining {
  private volatile boolean on;
  /** The {@link System#nanoTime()} by which what is in flight should be done; set before {@link #on}. */
  private volatile long deadlineNanos;
  private volatile long answersAfterMillis;

  public Draining(MeterRegistry registry) {
    Gauge.builder(Meters.DRAINING, this, draining -> draining.on ? 1 : 0)
        .description("1 from SIGTERM on: the node is not ready and refuses new orders while its close batches finish")
        .strongReference(true)
        .register(registry);
  }

  /**
   * The drain begins: what is in flight has {@code within} from now; a request still in flight then, whose statement
   * the drain cancels, has {@code answersAfter} more to answer before its connection is closed.
   */
  public void start(Duration within, Duration answersAfter) {
    deadlineNanos = System.nanoTime() + within.toNanos();
    answersAfterMillis = answersAfter.toMillis();
    on = true;
  }

  public boolean isOn() {
    return on;
  }

  /** What is left of the drain's time (0 once it ran out); 0 when the node is not draining. */
  public long millisLeft() {
    return on ? Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime())) : 0;
  }

  /** How long until the HTTP connections still open are closed, answered or not; 0 when the node is not draining. */
  public long connectionsClosedWithinMillis() {
    return on ? millisLeft() + answersAfterMillis : 0;
  }
}
