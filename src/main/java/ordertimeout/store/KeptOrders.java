package ordertimeout.store;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * The status cache's store: entries by order id, at most {@code maxEntries}, the one kept longest ago evicted first,
 * and none answered past {@code keptFor} after it was kept (dropped by the next keep). First in, first out, because a
 * buyer's page reads the order it has just created or paid: a cache that weighs how often an entry was read
 * (Caffeine's admission, used until decision 0027's amendment of 2026-12-07) turns the newest orders away once it is
 * full of older ones read as often, once or never. Its upkeep runs on the thread that kept an entry, a few at a time.
 */
final class KeptOrders {
  /** One keep: the entry, when, and under which id (evicted from the map only if this keep is still the one there). */
  private static final class Kept {
    final long id;
    final StatusCache.Entry entry;
    final long keptAtNanos;

    Kept(long id, StatusCache.Entry entry, long keptAtNanos) {
      this.id = id;
      this.entry = entry;
      this.keptAtNanos = keptAtNanos;
    }
  }

  private final int maxEntries;
  private final long keptForNanos;
  private final ConcurrentHashMap<Long, Kept> byId = new ConcurrentHashMap<>();
  /** Every keep in the order it was kept, also those since replaced or forgotten (skipped when they come up). */
  private final ConcurrentLinkedQueue<Kept> inOrder = new ConcurrentLinkedQueue<>();
  private final AtomicInteger queued = new AtomicInteger();

  KeptOrders(int maxEntries, long keptForNanos) {
    this.maxEntries = maxEntries;
    this.keptForNanos = keptForNanos;
  }

  /** The entry kept for {@code id}; null when none is, or it was kept longer ago than {@code keptFor}. */
  StatusCache.Entry get(long id) {
    Kept kept = byId.get(id);
    return kept == null || System.nanoTime() - kept.keptAtNanos > keptForNanos ? null : kept.entry;
  }

  /**
   * Keeps {@code fresh} (which may be null: none) for {@code id} when {@code freshWins} says so, checked atomically
   * with the change; otherwise leaves the entry there or, when {@code keepOld} is false, removes it.
   */
  void put(long id, StatusCache.Entry fresh, BooleanSupplier freshWins, boolean keepOld) {
    Kept candidate = fresh == null ? null : new Kept(id, fresh, System.nanoTime());
    Kept now = byId.compute(id, (key, old) -> freshWins.getAsBoolean() ? candidate : keepOld ? old : null);
    if (now != null && now == candidate) {
      inOrder.offer(candidate);
      queued.incrementAndGet();
      evict();
    }
  }

  void remove(long id) {
    byId.remove(id);
  }

  /** Forgets every entry, also those the queue holds: a cache gone off keeps no more, and frees what it held. */
  void clear() {
    while (inOrder.poll() != null) {
      queued.decrementAndGet();
    }
    byId.clear();
  }

  int size() {
    return byId.size();
  }

  /**
   * Takes keeps off the head of the queue while they are older than {@code keptFor}, the map holds more than
   * {@code maxEntries}, or the queue twice that (keeps since replaced count there until they come up).
   */
  private void evict() {
    long now = System.nanoTime();
    for (Kept head = inOrder.peek(); head != null; head = inOrder.peek()) {
      boolean due = now - head.keptAtNanos > keptForNanos || byId.size() > maxEntries
          || queued.get() > 2 * maxEntries;
      if (!due) {
        return;
      }
      Kept taken = inOrder.poll();
      if (taken != null) {
        queued.decrementAndGet();
        byId.remove(taken.id, taken);
      }
    }
  }
}
