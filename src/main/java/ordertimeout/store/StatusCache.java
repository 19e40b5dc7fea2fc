package ordertimeout.store;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import ordertimeout.metrics.Meters;
import ordertimeout.order.Order;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The orders a node alone read lately, so that a buyer's page polling its order does not reach PostgreSQL each time
 * (decision 0027). Never stale once a write committed: every write of a field the API shows goes through
 * {@link #writing} (or {@link #begin} and {@link #end} around its commit), which marks its orders before the
 * transaction starts and forgets them after it ended, committed or not. A marked order is read from PostgreSQL and not
 * kept; and a read that went to PostgreSQL keeps its answer only if no write of that order ended meanwhile (a ticket
 * taken before the read: a counter per stripe of ids that each {@link #end} moves). A pay group and a close batch keep
 * their orders as they committed them by the same rule, their tickets taken when they began ({@link Write}). Only
 * right on a node alone: another node's writes would not reach this cache, so with Kafka on it is {@link #OFF}; a
 * node's cache ({@link #whileAlone}) answers only while its lease vouches that no other node shares the database
 * ({@link #aloneUntil}), and goes off for good once one does ({@link #sharedWithAnotherNode}). An order is answered
 * at most {@link #KEPT_FOR} after it was read, so that a row an operator edited by hand in PostgreSQL is answered as
 * edited within a minute.
 */
public final class StatusCache {
  private static final Duration KEPT_FOR = Duration.ofSeconds(60);

  /** Keeps nothing; its marks and forgets cost nothing. */
  public static final StatusCache OFF = new StatusCache(0);

  private static final int STRIPES = 4096;

  /**
   * An order as read, with the client it belongs to (a read by another client answers not found), when it was read
   * from PostgreSQL (or committed), and its JSON once a read asked for it.
   */
  public static final class Entry {
    private final String client;
    private final Order order;
    private final long readAtNanos;
    private String json;

    Entry(String client, Order order) {
      this(client, order, System.nanoTime());
    }

    private Entry(String client, Order order, long readAtNanos) {
      this.client = client;
      this.order = order;
      this.readAtNanos = readAtNanos;
    }

    /**
     * This entry's order after a write that knows only the fields it changed: the rest are as old as this entry, so
     * the new one is too ({@link #get} answers none older than {@link #KEPT_FOR}).
     */
    Entry changedTo(Order changed) {
      return new Entry(client, changed, readAtNanos);
    }

    public boolean visibleTo(String reader) {
      return reader == null || reader.equals(client);
    }

    public Order order() {
      return order;
    }

    /**
     * The order as the API answers it, encoded by the first read that asks: a polled order is read many times and
     * never changes here (a write replaces the entry). Two reads on two event loops may both encode it: the same text.
     */
    public String json() {
      String text = json;
      if (text == null) {
        text = order.toJson().encode();
        json = text;
      }
      return text;
    }
  }

  private final KeptOrders entries;
  private final long keptForNanos;
  /** Orders whose write transaction is under way: how many. */
  private final ConcurrentHashMap<Long, Integer> writing = new ConcurrentHashMap<>();
  /** Per stripe of ids, how many writes ended: a read's ticket. */
  private final AtomicLongArray writesEnded = new AtomicLongArray(STRIPES);
  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  /** Answers only until {@link #aloneUntilNanos}: a node's cache, which its lease vouches for. */
  private final boolean vouchedFor;
  private volatile long aloneUntilNanos;
  private volatile boolean shared;

  /** {@code maxEntries} 0: {@link #OFF}. Answers whenever it holds an order (for one process alone). */
  public StatusCache(int maxEntries) {
    this(maxEntries, KEPT_FOR, false);
  }

  StatusCache(int maxEntries, Duration keptFor) {
    this(maxEntries, keptFor, false);
  }

  /**
   * A node's cache: it answers only while the node's lease vouches that it is alone on its database
   * ({@link #aloneUntil}), nothing before the first such word.
   */
  public static StatusCache whileAlone(int maxEntries) {
    return new StatusCache(maxEntries, KEPT_FOR, true);
  }

  private StatusCache(int maxEntries, Duration keptFor, boolean vouchedFor) {
    this.vouchedFor = vouchedFor;
    aloneUntilNanos = System.nanoTime();
    keptForNanos = keptFor.toNanos();
    entries = maxEntries == 0 ? null : new KeptOrders(maxEntries, keptForNanos);
  }

  /**
   * No other node held a lease on the database until {@code nanos} ({@link System#nanoTime()}), as the node's lease
   * saw it: the cache answers until then. When the last such word ran out before this one came, every order it kept
   * is forgotten first: while nobody vouched, another node may have come, written and gone.
   */
  public void aloneUntil(long nanos) {
    if (entries == null || shared) {
      return;
    }
    if (System.nanoTime() - aloneUntilNanos >= 0) {
      forgetAll();
    }
    aloneUntilNanos = nanos;
  }

  /**
   * Another node shares the database: its writes would not reach this cache, which answers nothing from now on and
   * forgets what it kept. True when it was on until now.
   */
  public boolean sharedWithAnotherNode() {
    if (entries == null || shared) {
      return false;
    }
    shared = true;
    forgetAll();
    return true;
  }

  /** Whether it may answer reads: it keeps orders and no other node was seen. */
  public boolean on() {
    return entries != null && !shared;
  }

  private boolean answering() {
    return !shared && (!vouchedFor || System.nanoTime() - aloneUntilNanos < 0);
  }

  /** The order as kept; null when it is not, or while a write of it is under way (then read PostgreSQL). */
  Entry get(long id) {
    if (entries == null) {
      return null;
    }
    Entry entry = writing.containsKey(id) || !answering() ? null : entries.get(id);
    if (entry != null && System.nanoTime() - entry.readAtNanos > keptForNanos) {
      entry = null; // built on an older entry by a write that changed a few fields
    }
    (entry == null ? misses : hits).increment();
    return entry;
  }

  /** Taken before a read goes to PostgreSQL, handed to {@link #keep}. */
  long ticket(long id) {
    return entries == null ? 0 : writesEnded.get(stripe(id));
  }

  /** Keeps what a read found, unless a write of the order is under way or one ended since {@code ticket} was taken. */
  void keep(long id, long ticket, String client, Order order) {
    if (entries == null || shared) {
      return;
    }
    Entry fresh = new Entry(client, order);
    entries.put(id, fresh, () -> writesEnded.get(stripe(id)) == ticket && !writing.containsKey(id), true);
  }

  /** Runs {@code write}, one transaction that may change {@code ids}, between {@link #begin} and {@link #end}. */
  <T> Future<T> writing(Long[] ids, Supplier<Future<T>> write) {
    if (entries == null) {
      return write.get();
    }
    begin(ids);
    return thenEnd(ids, null, write);
  }

  /**
   * {@link #writing(Long[], Supplier)} for a write that knows the orders it leaves behind: {@code write} hands them to
   * its {@link Write}, and once it committed each is kept, unless a write of another order of the same stripe of ids
   * (so also of that order) ended since this one began; one still under way hides it until it ends. A failed write
   * keeps nothing.
   */
  <T> Future<T> writing(Long[] ids, Function<Write, Future<T>> write) {
    if (entries == null) {
      return write.apply(Write.NONE);
    }
    Write begun = beginWrite(ids);
    return thenEnd(ids, begun, () -> write.apply(begun));
  }

  /**
   * Runs {@code write}, whose orders are marked, and ends it however it ends (also when it throws): keeping what
   * {@code begun} holds once it committed, forgetting its orders otherwise or when {@code begun} is null.
   */
  private <T> Future<T> thenEnd(Long[] ids, Write begun, Supplier<Future<T>> write) {
    Future<T> written;
    try {
      written = write.get();
    } catch (RuntimeException e) {
      end(ids);
      throw e;
    }
    return written.andThen(done -> {
      if (done.succeeded() && begun != null) {
        end(ids, begun);
      } else {
        end(ids);
      }
    });
  }

  /**
   * One write under way: each of its orders' ticket, taken when it began, and entry as kept then (for a write whose
   * statement answers only the fields it changed), and the orders as its transaction committed them, to be kept when
   * it ends.
   */
  public static final class Write {
    static final Write NONE = new Write();

    private final Map<Long, Long> tickets = new HashMap<>();
    private final Map<Long, Entry> before = new HashMap<>();
    private final Map<Long, Entry> committed = new HashMap<>();

    /** {@code order} as this write committed it, {@code client}'s. */
    void committed(String client, Order order) {
      committed(new Entry(client, order));
    }

    /** An order this write committed, as {@code entry} holds it. */
    void committed(Entry entry) {
      if (this != NONE) {
        committed.put(entry.order().id(), entry);
      }
    }

    /** Order {@code id} as kept when this write began; null when it was not (or another write of it was under way). */
    Entry before(long id) {
      return before.get(id);
    }
  }

  /**
   * Before a transaction that may change {@code ids} can commit: until {@link #end}, they are read from PostgreSQL.
   */
  void begin(Long[] ids) {
    if (entries == null) {
      return;
    }
    for (Long id : ids) {
      writing.merge(id, 1, Integer::sum);
    }
  }

  /**
   * {@link #begin}, and each order's ticket and entry as kept, for {@link #end(Long[], Write)}. The ticket is taken
   * before the look at the entry, as a read takes it before its query, and once for an order listed twice; the entry
   * of an order another write has marked may be older than that write's commit, and is not looked at.
   */
  Write beginWrite(Long[] ids) {
    Write write = new Write();
    for (Long id : ids) {
      if (!write.tickets.containsKey(id)) {
        write.tickets.put(id, writesEnded.get(stripe(id)));
        Entry kept = writing.containsKey(id) ? null : entries.get(id);
        if (kept != null) {
          write.before.put(id, kept);
        }
      }
      writing.merge(id, 1, Integer::sum);
    }
    return write;
  }

  /** After that transaction ended: forgets {@code ids}, and a read of them under way keeps nothing. */
  void end(Long[] ids) {
    if (entries == null) {
      return;
    }
    for (Long id : ids) {
      writesEnded.incrementAndGet(stripe(id));
      entries.remove(id);
      writing.computeIfPresent(id, (key, count) -> count == 1 ? null : count - 1);
    }
  }

  /**
   * After a committed transaction: {@link #end(Long[])}, but each order {@code write} committed is kept as it left
   * it, if the stripe of ids of that order moved only by this write's own ends since its ticket (checked atomically
   * with the insert, as a read's keep is). A write of the order still under way hides the entry from {@link #get}
   * until its own end, which forgets or replaces it.
   */
  void end(Long[] ids, Write write) {
    Map<Integer, Integer> ownEnds = new HashMap<>();
    for (Long id : ids) {
      writesEnded.incrementAndGet(stripe(id));
      ownEnds.merge(stripe(id), 1, Integer::sum);
    }
    write.tickets.forEach((id, ticket) -> {
      int stripe = stripe(id);
      long unmoved = ticket + ownEnds.get(stripe);
      Entry fresh = write.committed.get(id);
      entries.put(id, fresh, () -> !shared && writesEnded.get(stripe) == unmoved, false);
    });
    for (Long id : ids) {
      writing.computeIfPresent(id, (key, count) -> count == 1 ? null : count - 1);
    }
  }

  /** Forgets every order (their partitions were dropped: a kept one would be answered after it is gone). */
  void forgetAll() {
    if (entries == null) {
      return;
    }
    for (int i = 0; i < STRIPES; i++) {
      writesEnded.incrementAndGet(i);
    }
    entries.clear();
  }

  /** Its reads by result ({@code hit}: answered from here) and its size, on {@code registry}. */
  public StatusCache bindTo(MeterRegistry registry) {
    FunctionCounter.builder(Meters.STATUS_CACHE_READS, hits, LongAdder::sum).tag("result", "hit")
        .description("Order reads answered from the status cache (a node alone)").register(registry);
    FunctionCounter.builder(Meters.STATUS_CACHE_READS, misses, LongAdder::sum).tag("result", "miss")
        .description("Order reads answered from the status cache (a node alone)").register(registry);
    Gauge.builder(Meters.STATUS_CACHE_ORDERS, this, StatusCache::size)
        .description("Orders kept in the status cache").strongReference(true).register(registry);
    return this;
  }

  /** How many orders it keeps. */
  long size() {
    return entries == null ? 0 : entries.size();
  }

  private static int stripe(long id) {
    return (int) (Long.hashCode(id * 0x9E3779B97F4A7C15L) & (STRIPES - 1));
  }
}
