package ordertimeout.store;

import ordertimeout.config.AppConfig.ClientLimits;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * When a create group may take its client's lock shared instead of exclusive (docs/decisions/0029), so that the
 * client's groups run side by side instead of one after another, and its caps still hold exactly.
 *
 * <p>A group that takes the lock shared also takes one of the client's {@value #SLOTS} slot locks exclusive, and adds
 * at most {@code ordersPerGroup} orders and {@code unitsPerGroup} units of that client. So while it runs, at most
 * {@value #SLOTS} - 1 other groups add to the client's holdings without its seeing them, each at most as much: the
 * margin. A group that read the client's holdings {@code held} takes an order shared only if {@code held}, what the
 * group takes, and the margin stay within the caps. Otherwise it leaves the order to a group that takes the lock
 * exclusive (no other create of the client runs then) and counts exactly, as every group did before.
 *
 * <p>Which lock the next group of a client takes is guessed from the holdings the node's last group of it read, with
 * the orders that group took: exclusive while they were within a group and the margin of a cap. The guess decides
 * only speed: the check above decides the orders.
 */
final class CapHeadroom {
  /**
   * Slot locks per client, a power of two (their keys are a block of that size); the creates' stripes of
   * client_holdings are as many (migration V16, 17 + backend pid mod 16). Every node must agree on it and on the
   * shares below, or the margin no longer covers the others.
   */
  static final int SLOTS = 16;
  static final CapHeadroom DEFAULT = new CapHeadroom(256, 25_600);

  private final long ordersPerGroup;
  private final long unitsPerGroup;
  private final Map<String, Boolean> nearCap = new ConcurrentHashMap<>();

  CapHeadroom(long ordersPerGroup, long unitsPerGroup) {
    this.ordersPerGroup = ordersPerGroup;
    this.unitsPerGroup = unitsPerGroup;
  }

  /** Whether the next group of {@code client} takes its lock shared. */
  boolean shared(String client, ClientLimits limits) {
    return fits(0, 0, ordersPerGroup, unitsPerGroup, limits) && !nearCap.getOrDefault(client, false);
  }

  /** The client's holdings as a group read them, with the orders it took, for the next group's guess. */
  void read(String client, long unpaid, long units, ClientLimits limits) {
    nearCap.put(client, !fits(unpaid, units, ordersPerGroup, unitsPerGroup, limits));
  }

  /**
   * Whether a group holding the client's lock shared, which read {@code heldUnpaid} and {@code heldUnits}, may take
   * its orders of that client so far, {@code groupOrders} orders of {@code groupUnits} units with the one at hand.
   */
  boolean takes(long heldUnpaid, long heldUnits, long groupOrders, long groupUnits, ClientLimits limits) {
    return groupOrders <= ordersPerGroup && groupUnits <= unitsPerGroup
        && fits(heldUnpaid, heldUnits, groupOrders, groupUnits, limits);
  }

  private boolean fits(long heldUnpaid, long heldUnits, long groupOrders, long groupUnits, ClientLimits limits) {
    long others = SLOTS - 1;
    return heldUnpaid + groupOrders + others * ordersPerGroup <= limits.maxUnpaidOrders()
        && heldUnits + groupUnits + others * unitsPerGroup <= limits.maxReservedUnits();
  }
}
