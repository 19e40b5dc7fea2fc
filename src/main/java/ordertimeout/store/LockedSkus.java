package ordertimeout.store;

import ordertimeout.order.NewOrder;
import ordertimeout.order.OrderItem;

import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The SKUs whose inventory row another transaction was found holding past the intake's lock wait, each remembered
 * for a while: their creates are refused at once meanwhile, so that they do not make every create group wait for the
 * row again. One per node, shared by its intake instances, so that one instance's finding spares the others the wait.
 */
public final class LockedSkus {
  private final long rememberNanos;
  /** SKU to the {@link System#nanoTime()} until which its creates are refused at once. */
  private final Map<String, Long> until = new ConcurrentHashMap<>();

  public LockedSkus(Duration remember) {
    this.rememberNanos = remember.toNanos();
  }

  void remember(Collection<String> skus) {
    long end = System.nanoTime() + rememberNanos;
    skus.forEach(sku -> until.put(sku, end));
  }

  /** A SKU of the order still remembered as held, or null. */
  String heldSkuOf(NewOrder order) {
    long now = System.nanoTime();
    for (OrderItem item : order.items()) {
      Long end = until.get(item.sku());
      if (end != null) {
        if (end - now > 0) {
          return item.sku();
        }
        until.remove(item.sku(), end);
      }
    }
    return null;
  }
}
