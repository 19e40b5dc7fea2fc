package ordertimeout.http;

import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * Deadlines that all last as long, set and cancelled on one event loop, checked by one periodic timer instead of a
 * Vert.x timer each (a timer costs a map entry and a priority queue's insert and removal, per request: a few percent
 * of the node's CPU at thousands of requests a second). Since they all last as long, they expire in the order they
 * were set, so a list in that order is also the queue by deadline: starting one appends it, cancelling one unlinks it,
 * and the check takes the expired from the head.
 *
 * <p>The check runs every twentieth of the length (at most 100 ms), and fires a deadline up to one such tick early,
 * never late: what it bounds never waits longer than {@code lengthMillis}.
 */
final class SameLengthDeadlines {
  private static final Logger log = LoggerFactory.getLogger(SameLengthDeadlines.class);
  private static final long MAX_TICK_MILLIS = 100;

  private final Vertx vertx;
  private final long lengthNanos;
  private final long tickMillis;
  /** A sentinel: its {@code next} is the oldest deadline, its {@code previous} the newest. */
  private final Deadline head = new Deadline(null);
  private boolean checking;

  SameLengthDeadlines(Vertx vertx, long lengthMillis) {
    this.vertx = vertx;
    this.lengthNanos = TimeUnit.MILLISECONDS.toNanos(lengthMillis);
    this.tickMillis = Math.max(1, Math.min(MAX_TICK_MILLIS, lengthMillis / 20));
    head.previous = head;
    head.next = head;
  }

  /** A deadline that, once started, runs {@code onExpiry} after {@code lengthMillis} unless cancelled before. */
  Deadline deadline(Runnable onExpiry) {
    return new Deadline(onExpiry);
  }

  private void check() {
    long firesBefore = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(tickMillis);
    while (head.next != head && head.next.dueNanos - firesBefore <= 0) {
      Deadline expired = head.next;
      expired.cancel();
      try {
        expired.onExpiry.run();
      } catch (RuntimeException e) {
        log.warn("a deadline's expiry failed", e);
      }
    }
  }

  final class Deadline {
    private final Runnable onExpiry;
    private Deadline previous;
    private Deadline next;
    private long dueNanos;

    private Deadline(Runnable onExpiry) {
      this.onExpiry = onExpiry;
    }

    /** Starts this deadline from now, whether it was running, expired or cancelled. */
    void start() {
      cancel();
      dueNanos = System.nanoTime() + lengthNanos;
      previous = head.previous;
      next = head;
      head.previous.next = this;
      head.previous = this;
      if (!checking) {
        checking = true;
        vertx.setPeriodic(tickMillis, tick -> check());
      }
    }

    /** Stops this deadline; nothing when it is not running. */
    void cancel() {
      if (next != null) {
        previous.next = next;
        next.previous = previous;
        previous = null;
        next = null;
      }
    }
  }
}
