package ordertimeout.support;

import io.vertx.core.Vertx;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Records every batch of due orders a node hands to its close verticle ({@link Addresses#CLOSE_DUE},
 * {@link Addresses#REMIND_DUE}), with the path that found it (wheel or sweep), as the bus carried
 * it: an outbound interceptor on the node's event bus, which sees each send once and changes nothing.
 */
public final class DueTap {
  /** One batch as sent, in the order sent. */
  public record Batch(String address, DueOrders.Path path, long[] ids) {}

  private final List<Batch> batches = new ArrayList<>();

  private DueTap() {}

  /** Starts recording on {@code vertx}'s event bus; best before the node starts, to miss nothing. */
  public static DueTap on(Vertx vertx) {
    DueTap tap = new DueTap();
    vertx.eventBus().addOutboundInterceptor(delivery -> {
      String address = delivery.message().address();
      if ((Addresses.CLOSE_DUE.equals(address) || Addresses.REMIND_DUE.equals(address))
          && delivery.body() instanceof DueOrders due) {
        tap.add(new Batch(address, due.path(), due.orderIds().clone()));
      }
      delivery.next();
    });
    return tap;
  }

  private synchronized void add(Batch batch) {
    batches.add(batch);
  }

  /** The batches sent to {@code address} by {@code path}, in the order sent. */
  public synchronized List<Batch> batches(String address, DueOrders.Path path) {
    return batches.stream().filter(batch -> batch.address().equals(address) && batch.path() == path).toList();
  }

  /** How many times each order id was sent to {@code address} by {@code path}. */
  public Map<Long, Integer> timesSent(String address, DueOrders.Path path) {
    Map<Long, Integer> times = new HashMap<>();
    for (Batch batch : batches(address, path)) {
      Arrays.stream(batch.ids()).forEach(id -> times.merge(id, 1, Integer::sum));
    }
    return times;
  }

  /** Every id sent to {@code address} by {@code path}, in the order sent. */
  public List<Long> idsSent(String address, DueOrders.Path path) {
    List<Long> ids = new ArrayList<>();
    for (Batch batch : batches(address, path)) {
      Arrays.stream(batch.ids()).forEach(ids::add);
    }
    return ids;
  }
}
