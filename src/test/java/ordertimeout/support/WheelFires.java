package ordertimeout.support;

import io.vertx.core.Vertx;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The order ids one node's time wheel handed to its close path (close.due sends marked
 * {@link DueOrders.Path#WHEEL}) since {@link #of} was called: which wheel fired an order, whether or not
 * its close then won the compare-and-set. Read from the node's event bus, no hook in the service.
 */
public final class WheelFires {
  private final Set<Long> fired = ConcurrentHashMap.newKeySet();

  private WheelFires() {}

  /** Starts recording the wheel fires of the node on {@code vertx}. */
  public static WheelFires of(Vertx vertx) {
    WheelFires fires = new WheelFires();
    vertx.eventBus().addOutboundInterceptor(delivery -> {
      if (delivery.message().address().equals(Addresses.CLOSE_DUE) && delivery.body() instanceof DueOrders due
          && due.path() == DueOrders.Path.WHEEL) {
        for (long id : due.orderIds()) {
          fires.fired.add(id);
        }
      }
      delivery.next();
    });
    return fires;
  }

  public boolean fired(long orderId) {
    return fired.contains(orderId);
  }

  public boolean firedAll(Set<Long> orderIds) {
    return fired.containsAll(orderIds);
  }

  /** A copy of what was fired so far. */
  public Set<Long> ids() {
    return Set.copyOf(fired);
  }
}
