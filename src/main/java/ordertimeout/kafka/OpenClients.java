package ordertimeout.kafka;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The Kafka clients a verticle made off the event loop and has not closed yet. At the verticle's stop,
 * {@link #closeAll} closes them without waiting for their calls, and from then on a client is closed as soon as it is
 * made: Vert.x may close its event loops before a client's future completes, and a client nobody closes keeps its
 * thread reconnecting to an absent broker for as long as the process lives. Each close joins the client's thread:
 * the methods that close run off the event loop.
 */
public final class OpenClients {
  private static final Logger log = LoggerFactory.getLogger(OpenClients.class);
  static final long STOP_WAIT_MILLIS = 5_000;

  private final Map<Object, Runnable> open = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /** Makes a client with {@code maker} (blocking), unless closed; one made while {@link #closeAll} ran is closed. */
  public <C> C make(Callable<C> maker, Consumer<C> closeNow) throws Exception {
    if (closed) {
      throw new Closed();
    }
    C client = maker.call();
    open.put(client, () -> closeNow.accept(client));
    if (closed) {
      closeNow(client);
      throw new Closed();
    }
    return client;
  }

  /** Closes {@code client} without waiting for its calls, unless that was done already. Blocking. */
  public void closeNow(Object client) {
    Runnable close = open.remove(client);
    if (close != null) {
      close.run();
    }
  }

  /** A client its owner closed itself: no longer one to close. */
  public void forget(Object client) {
    open.remove(client);
  }

  /** Closes every client still open without waiting for its calls, and every client made from now on. Blocking. */
  public void closeAll() {
    closed = true;
    for (Object client : open.keySet()) {
      try {
        closeNow(client);
      } catch (RuntimeException e) { // the others are closed all the same
        log.warn("a Kafka client did not close cleanly at its verticle's stop: {}", e.toString());
      }
    }
  }

  /**
   * {@link #closeAll} off the event loop, for a verticle's stop, which waits for it at most {@value #STOP_WAIT_MILLIS}
   * ms: a close joins the client's network thread, which may sit in a DNS lookup that does not answer; the close
   * then ends in the background.
   */
  public Future<Void> closeAll(Vertx vertx) {
    return vertx.<Void>executeBlocking(() -> {
          closeAll();
          return null;
        }, false)
        .timeout(STOP_WAIT_MILLIS, TimeUnit.MILLISECONDS)
        .recover(failure -> {
          log.warn("Kafka clients still closing {} ms after their verticle's stop; they close in the background",
              STOP_WAIT_MILLIS);
          return Future.succeededFuture();
        });
  }

  /** No client is made once the verticle that makes them stopped. */
  public static final class Closed extends IllegalStateException {
    Closed() {
      super("no Kafka client is made after its verticle stopped");
    }
  }
}
