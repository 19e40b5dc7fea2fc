package ordertimeout.kafka;

import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The Kafka clients a verticle made off the event loop and has not closed yet. At the verticle's stop,
 * {@link #closeAll} closes them without waiting for their calls, and from then on a client is closed as soon as it is
 * made: Vert.x may close its event loops before a client's future completes, and a client nobody closes keeps its
 * thread reconnecting to an absent broker for as long as the process lives. Each close joins the client's thread:
 * the methods that close run off the event loop.
 */
public final class OpenClients {
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
    open.keySet().forEach(this::closeNow);
  }

  /** No client is made once the verticle that makes them stopped. */
  public static final class Closed extends IllegalStateException {
    Closed() {
      super("no Kafka client is made after its verticle stopped");
    }
  }
}
