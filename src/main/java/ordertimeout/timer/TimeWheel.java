package ordertimeout.timer;

import ordertimeout.order.OrderIds;

import java.util.Arrays;
import java.util.Objects;
import java.util.function.LongPredicate;

/**
 * Hierarchical timing wheel (Linux style: one level of 256 slots, then four levels of 64 slots) for order timers.
 *
 * <p>Timers are kept in a slab of primitive arrays instead of one object per timer: 22-28 bytes per timer with the
 * order-id index (a chained hash) and the free-cell bitmaps, depending on how full the slab is. A timer is (order id,
 * due time, kind); the kinds used are {@link #CLOSE} and {@link #REMIND}, any value in {@code [0, KIND_LIMIT)} is
 * accepted. A cell is two adjacent longs, the order id and a word packing the due tick, the kind and the next cell of
 * its list, so that walking a slot touches one cache line per timer. Free cells are found through a two-level bitmap
 * by a cursor that moves forward through the slab, so that timers scheduled one after another sit next to each other
 * (a LIFO free list scatters them over the whole slab within a few rounds). At most {@value #MAX_CAPACITY} timers.
 *
 * <p>Time is cut into ticks of {@code tickMillis}, tick 0 starting at {@code startMillis}. A timer due at {@code d}
 * belongs to the first tick boundary at or after {@code d} and fires on the first {@link #advance} whose
 * {@code nowMillis} reaches that boundary: never before {@code d}, at most one tick after it.
 *
 * <p>Not thread-safe: use it from a single thread (one event loop). The {@link DueSink} may call {@link #schedule}
 * (a timer that is already due then fires later in the same advance, or at the latest on the next one) and
 * {@link #cancel} (ids already in a batch under way are still handed out), but must not throw, nor call
 * {@link #advance} or {@link #clear}.
 */
public final class TimeWheel {
  public static final byte CLOSE = 0;
  public static final byte REMIND = 1;
  /** Kinds must lie in {@code [0, KIND_LIMIT)}. */
  public static final int KIND_LIMIT = 16;
  public static final long DEFAULT_TICK_MILLIS = 10;

  /** Receives fired order ids, in batches of one kind. It must copy {@code ids} to keep them: the array is reused. */
  @FunctionalInterface
  public interface DueSink {
    void due(byte kind, long[] ids, int count);
  }

  private static final int CANCELLED = KIND_LIMIT; // tombstone: still linked in a slot list, reclaimed when that is walked
  private static final int FREE = KIND_LIMIT + 1;
  private static final byte ANY_KIND = -1;
  /** Layout of a cell's second long: due tick (low 32 bits of it) | state (5 bits) | next cell (27 bits). */
  private static final int NEXT_BITS = 27;
  private static final int NEXT_MASK = (1 << NEXT_BITS) - 1;
  private static final long STATE_MASK = 0x1FL << NEXT_BITS;
  /** The end of a list; never a cell index, as there are fewer cells. */
  private static final int NIL = NEXT_MASK;
  private static final int LEVELS = 5;
  private static final int[] SHIFT = {0, 8, 14, 20, 26};
  private static final int[] SLOTS = {256, 64, 64, 64, 64};
  /** The wheel holds timers due less than 2^32 ticks ahead (~497 days at 10 ms); later ones wait in the far list. */
  private static final long HORIZON = 1L << 32;
  /** Past-due ticks are clamped to this distance behind nextTick, so that they fit the int field. */
  private static final long MAX_PAST = 1L << 30;
  static final int MAX_CAPACITY = NEXT_MASK - 1;
  private static final int SEQUENCE_MASK = (1 << OrderIds.SEQUENCE_BITS) - 1;

  private final long tickMillis;
  private final long startMillis;
  private final int initialCapacity;

  // The slab: cell c is cells[2c] (order id) and cells[2c + 1] (due tick, state, next cell in its slot or expired list).
  // The due tick is kept as its low 32 bits; where the cell sits tells the rest.
  private long[] cells = new long[0];
  private int capacity;
  private int[] hashNext = new int[0]; // next cell in the same hash bucket (live cells only)
  private int[] buckets;               // order id hash -> first cell
  private int bucketMask;
  private int highWater;   // cells below this index have been handed out at least once
  private long[] freeBits = new long[0]; // one bit per cell below highWater: set when free
  private long[] freeWords = new long[0]; // one bit per word of freeBits: set when it has a free cell
  private int freeCount;
  private int allocationWord; // where the search for a free cell goes on: a word of freeBits

  private final int[][] slotHeads = new int[LEVELS][];
  private final int[] levelCells = new int[LEVELS]; // cells (live or tombstones) per level, to skip empty stretches
  private int expiredHead; // timers scheduled with a due tick already processed
  private int[] farCells = new int[0];
  private long[] farDue = new long[0]; // absolute due tick of each far cell
  private int farCount;

  private long nextTick; // the first tick not processed yet
  private int pending;
  private final int[] pendingByKind = new int[KIND_LIMIT];
  private int tombstones;

  private final long[][] batches = new long[KIND_LIMIT][];
  private final int[] batchSizes = new int[KIND_LIMIT];
  private int maxBatch;  // of the advance under way
  private DueSink sink;  // of the advance under way

  public TimeWheel(long tickMillis, long startMillis, int initialCapacity) {
    if (tickMillis <= 0) throw new IllegalArgumentException("tickMillis must be positive: " + tickMillis);
    if (initialCapacity < 0) throw new IllegalArgumentException("initialCapacity must be >= 0: " + initialCapacity);
    this.tickMillis = tickMillis;
    this.startMillis = startMillis;
    this.initialCapacity = Math.max(16, initialCapacity);
    for (int level = 0; level < LEVELS; level++) slotHeads[level] = new int[SLOTS[level]];
    resizeSlab(this.initialCapacity);
    resetState();
  }

  /** Adds a timer in O(1). A due time whose tick was already processed fires on the next advance. */
  public void schedule(long orderId, long dueMillis, byte kind) {
    if (kind < 0 || kind >= KIND_LIMIT) throw new IllegalArgumentException("kind out of range: " + kind);
    long due = Math.max(ceilTick(dueMillis), nextTick - MAX_PAST);
    int cell = allocateCell();
    cells[2 * cell] = orderId;
    cells[2 * cell + 1] = ((long) (int) due << 32) | ((long) kind << NEXT_BITS) | NIL;
    hashInsert(cell);
    place(cell, nextTick, due);
    pending++;
    pendingByKind[kind]++;
  }

  /** Cancels every timer (of any kind) of the order; returns how many there were. O(1) expected. */
  public int cancel(long orderId) {
    return cancel(orderId, ANY_KIND);
  }

  /** Cancels the order's timers of one kind ({@link #CLOSE}, {@link #REMIND}); returns how many there were. O(1) expected. */
  public int cancel(long orderId, byte kind) {
    int bucket = bucketOf(orderId);
    int previous = NIL;
    int cancelled = 0;
    for (int cell = buckets[bucket]; cell != NIL; ) {
      int following = hashNext[cell];
      int state = state(cell);
      if (cells[2 * cell] == orderId && (kind == ANY_KIND || state == kind)) {
        if (previous == NIL) buckets[bucket] = following; else hashNext[previous] = following;
        pending--;
        pendingByKind[state]--;
        setState(cell, CANCELLED);
        tombstones++;
        cancelled++;
      } else {
        previous = cell;
      }
      cell = following;
    }
    return cancelled;
  }

  /**
   * Cancels every timer whose order id matches, e.g. those of the shards a node just lost; returns how
   * many there were. O(capacity): meant for rare events, not for the hot path.
   */
  public int cancelWhere(LongPredicate orderIdMatches) {
    int cancelled = 0;
    for (int cell = 0; cell < highWater; cell++) {
      if (state(cell) < KIND_LIMIT && orderIdMatches.test(cells[2 * cell])) {
        cancelled += cancel(cells[2 * cell]);
      }
    }
    return cancelled;
  }

  /** Receives each timer {@link #removeWhere} takes out. */
  @FunctionalInterface
  public interface RemovedSink {
    /** {@code dueMillis}: the tick boundary it would have fired at: at or after its due time, by under a tick. */
    void removed(long orderId, byte kind, long dueMillis);
  }

  /**
   * As {@link #cancelWhere}, handing each timer taken out to {@code sink} with its due time, e.g. for another node's
   * wheel. O(capacity); never from a {@link DueSink}.
   */
  public int removeWhere(LongPredicate orderIdMatches, RemovedSink sink) {
    long[] elsewhere = new long[(highWater + 63) >>> 6]; // cells in the expired list or in the far list
    int removed = 0;
    for (int cell = expiredHead; cell != NIL; cell = (int) cells[2 * cell + 1] & NEXT_MASK) {
      elsewhere[cell >>> 6] |= 1L << cell;
      removed += removeIfMatches(cell, dueTick(cell, nextTick - 2 * MAX_PAST), orderIdMatches, sink);
    }
    for (int i = 0; i < farCount; i++) {
      elsewhere[farCells[i] >>> 6] |= 1L << farCells[i];
      removed += removeIfMatches(farCells[i], farDue[i], orderIdMatches, sink);
    }
    for (int cell = 0; cell < highWater; cell++) {
      if (((freeBits[cell >>> 6] | elsewhere[cell >>> 6]) & (1L << cell)) == 0) {
        removed += removeIfMatches(cell, dueTick(cell, nextTick), orderIdMatches, sink);
      }
    }
    return removed;
  }

  /** The due tick of a cell whose tick lies in {@code [from, from + 2^32)}, from its low 32 bits (as drain does). */
  private long dueTick(int cell, long from) {
    return from + (((int) (cells[2 * cell + 1] >>> 32) - (int) from) & 0xFFFF_FFFFL);
  }

  private int removeIfMatches(int cell, long dueTick, LongPredicate orderIdMatches, RemovedSink sink) {
    int state = state(cell);
    long orderId = cells[2 * cell];
    if (state >= KIND_LIMIT || !orderIdMatches.test(orderId)) {
      return 0;
    }
    hashRemove(cell);
    pending--;
    pendingByKind[state]--;
    setState(cell, CANCELLED); // a tombstone, still linked where it sits, reclaimed as cancel's are
    tombstones++;
    sink.removed(orderId, (byte) state, startMillis + dueTick * tickMillis);
    return 1;
  }

  public int pending() {
    return pending;
  }

  public int pending(byte kind) {
    return kind >= 0 && kind < KIND_LIMIT ? pendingByKind[kind] : 0;
  }

  /**
   * Fires every timer whose due tick is <= the tick of nowMillis; hands them out through the sink in batches of at
   * most maxBatch ids of one kind; returns the number fired.
   */
  public int advance(long nowMillis, int maxBatch, DueSink sink) {
    if (maxBatch <= 0) throw new IllegalArgumentException("maxBatch must be positive: " + maxBatch);
    this.sink = Objects.requireNonNull(sink, "sink");
    this.maxBatch = maxBatch;
    long target = Math.floorDiv(nowMillis - startMillis, tickMillis);
    int fired = drainExpired(target);
    while (nextTick <= target) {
      // No jumping while past-due timers that the sink scheduled wait: their tick is read relative to nextTick.
      long tick = expiredHead == NIL ? nextBusyTick(nextTick) : nextTick;
      if (tick > target) {
        nextTick = target + 1;
        break;
      }
      if ((tick & (SLOTS[0] - 1)) == 0) cascade(tick);
      nextTick = tick + 1; // before firing, so that timers the sink schedules are placed after this tick
      fired += drain(detach(0, (int) tick & (SLOTS[0] - 1)), 0, tick, tick, tick);
      fired += drainExpired(target);
    }
    for (int kind = 0; kind < KIND_LIMIT; kind++) {
      if (batchSizes[kind] > 0) flush((byte) kind);
    }
    this.sink = null;
    return fired;
  }

  /** Drops every timer and gives back memory beyond the initial capacity. The clock position is kept. */
  public void clear() {
    resetState();
    if (capacity != initialCapacity) resizeSlab(initialCapacity);
  }

  /** Approximate bytes held by the arrays (sum of array lengths times element size). */
  public long heapBytes() {
    long bytes = 8L * cells.length + 4L * hashNext.length + 4L * buckets.length
        + 8L * (freeBits.length + freeWords.length) + 4L * farCells.length + 8L * farDue.length;
    for (int[] heads : slotHeads) bytes += 4L * heads.length;
    for (long[] batch : batches) bytes += batch == null ? 0 : 8L * batch.length;
    return bytes;
  }

  // ---- wheel mechanics ----

  /** The first tick >= tick at which something can happen: a non-empty level-0 slot or a cascade of a busy level. */
  private long nextBusyTick(long tick) {
    long best = Long.MAX_VALUE;
    if (levelCells[0] > 0) {
      int from = (int) tick & (SLOTS[0] - 1);
      int slot = from;
      while (slot < SLOTS[0] && slotHeads[0][slot] == NIL) slot++;
      best = tick + (slot - from); // slot == 256 means the next block boundary (timers wrapped past it)
    }
    for (int level = 1; level < LEVELS; level++) { // the lowest busy level cascades first
      if (levelCells[level] > 0) {
        best = Math.min(best, roundUp(tick, SHIFT[level]));
        break;
      }
    }
    if (farCount > 0) best = Math.min(best, roundUp(tick, SHIFT[LEVELS - 1]));
    return best;
  }

  private static long roundUp(long tick, int shift) {
    long unit = 1L << shift;
    return (tick + unit - 1) & -unit;
  }

  /** Puts a cell in the level whose range covers its distance from base (the first unprocessed tick). */
  private void place(int cell, long base, long due) {
    long delta = due - base;
    if (delta < 0) {
      setNext(cell, expiredHead);
      expiredHead = cell;
    } else if (delta >= HORIZON) {
      addFar(cell, due);
    } else {
      int level = delta < SLOTS[0] ? 0 : 1 + (63 - Long.numberOfLeadingZeros(delta) - SHIFT[1]) / 6;
      int slot = (int) (due >>> SHIFT[level]) & (SLOTS[level] - 1);
      setNext(cell, slotHeads[level][slot]);
      slotHeads[level][slot] = cell;
      levelCells[level]++;
    }
  }

  /** At a multiple of 256 ticks: moves the slot of each level that starts now down to the lower levels. */
  private void cascade(long tick) {
    for (int level = 1; level < LEVELS; level++) {
      int slot = (int) (tick >>> SHIFT[level]) & (SLOTS[level] - 1);
      drain(detach(level, slot), level, tick, tick, tick - 1);
      if (level == LEVELS - 1) reexamineFar(tick);
      else if (slot != 0) return;
    }
  }

  private void addFar(int cell, long due) {
    if (farCount == farCells.length) {
      int capacity = farCount + (farCount >> 1) + 8;
      farCells = Arrays.copyOf(farCells, capacity);
      farDue = Arrays.copyOf(farDue, capacity);
    }
    farCells[farCount] = cell;
    farDue[farCount++] = due;
  }

  /** Moves far timers that came within the horizon into the wheel and drops cancelled ones. */
  private void reexamineFar(long base) {
    int kept = 0;
    for (int i = 0; i < farCount; i++) {
      int cell = farCells[i];
      long due = farDue[i];
      if (state(cell) == CANCELLED) {
        releaseTombstone(cell);
      } else if (due - base < HORIZON) {
        place(cell, base, due);
      } else {
        farCells[kept] = cell;
        farDue[kept++] = due;
      }
    }
    farCount = kept;
  }

  private int detach(int level, int slot) {
    int head = slotHeads[level][slot];
    slotHeads[level][slot] = NIL;
    return head;
  }

  /**
   * Walks a detached list (of wheel level {@code level}, or -1): frees tombstones, fires the timers due by
   * {@code fireUpTo} and places the others again relative to {@code base}. Every due tick of the list must lie in
   * {@code [from, from + 2^32)}, which recovers it from its low 32 bits.
   */
  private int drain(int cell, int level, long from, long base, long fireUpTo) {
    int fired = 0;
    while (cell != NIL) {
      long word = cells[2 * cell + 1];
      int following = (int) word & NEXT_MASK;
      if (level >= 0) levelCells[level]--;
      if (stateOf(word) == CANCELLED) {
        releaseTombstone(cell);
      } else {
        long due = from + (((int) (word >>> 32) - (int) from) & 0xFFFF_FFFFL);
        if (due <= fireUpTo) {
          fire(cell, stateOf(word));
          fired++;
        } else {
          place(cell, base, due);
        }
      }
      cell = following;
    }
    return fired;
  }

  /**
   * Fires the past-due timers; keeps those after target (only when the clock went backwards or is before start).
   * Their ticks were clamped to at most MAX_PAST behind nextTick, and nextTick has moved on by a tick at most since.
   */
  private int drainExpired(long target) {
    int head = expiredHead;
    expiredHead = NIL;
    return drain(head, -1, nextTick - 2 * MAX_PAST, nextTick, target);
  }

  private void fire(int cell, int kind) {
    long id = cells[2 * cell];
    hashRemove(cell);
    pending--;
    pendingByKind[kind]--;
    freeCell(cell);
    long[] batch = batches[kind];
    if (batch == null || batch.length < maxBatch) batches[kind] = batch = new long[maxBatch];
    batch[batchSizes[kind]++] = id;
    if (batchSizes[kind] >= maxBatch) flush((byte) kind);
  }

  private void flush(byte kind) {
    int count = batchSizes[kind];
    batchSizes[kind] = 0;
    sink.due(kind, batches[kind], count);
  }

  // ---- slab and hash index ----

  private long ceilTick(long millis) {
    long offset = millis - startMillis;
    if (((millis ^ startMillis) & (millis ^ offset)) < 0) { // overflow: saturate far away
      return millis < startMillis ? Long.MIN_VALUE / 2 : Long.MAX_VALUE / 2;
    }
    long floor = Math.floorDiv(offset, tickMillis); // one division: schedule's most expensive instruction
    return offset == floor * tickMillis ? floor : floor + 1;
  }

  /** A free cell at or after the search cursor if there is one; else a new one at highWater. */
  private int allocateCell() {
    if (freeCount == 0) {
      if (highWater == capacity) {
        // Mostly tombstones (cancelled orders whose slot has not come up yet): reclaim them rather than grow.
        if (tombstones >= capacity / 4 && sink == null) purgeTombstones(); else grow();
      }
      if (freeCount == 0) return highWater++;
    }
    int word = nextFreeWord(allocationWord);
    long bits = freeBits[word];
    long rest = bits & (bits - 1);
    freeBits[word] = rest;
    if (rest == 0) freeWords[word >>> 6] &= ~(1L << word);
    freeCount--;
    allocationWord = word;
    return (word << 6) + Long.numberOfTrailingZeros(bits);
  }

  /** The first word of freeBits at or after {@code from}, wrapping around, with a free cell in it; there must be one. */
  private int nextFreeWord(int from) {
    int summary = from >>> 6;
    long bits = freeWords[summary] & (-1L << from);
    while (bits == 0) {
      summary = summary + 1 == freeWords.length ? 0 : summary + 1;
      bits = freeWords[summary];
    }
    return (summary << 6) + Long.numberOfTrailingZeros(bits);
  }

  private void freeCell(int cell) {
    setState(cell, FREE);
    freeBits[cell >>> 6] |= 1L << cell;
    freeWords[cell >>> 12] |= 1L << (cell >>> 6);
    freeCount++;
  }

  private int state(int cell) {
    return stateOf(cells[2 * cell + 1]);
  }

  private static int stateOf(long word) {
    return (int) ((word & STATE_MASK) >>> NEXT_BITS);
  }

  private void setState(int cell, int state) {
    cells[2 * cell + 1] = (cells[2 * cell + 1] & ~STATE_MASK) | ((long) state << NEXT_BITS);
  }

  private void setNext(int cell, int next) {
    cells[2 * cell + 1] = (cells[2 * cell + 1] & ~(long) NEXT_MASK) | next;
  }

  private void releaseTombstone(int cell) {
    tombstones--;
    freeCell(cell);
  }

  /**
   * Frees the tombstones. One pass in slab order rebuilds the slot lists from the live cells (placing them relative
   * to nextTick, as schedule does): walking the lists themselves would visit the cells in scattered order, several
   * times slower. The expired list and the far cells are walked as before. Never during an advance, where the
   * list being fired is detached from its slot and still being walked.
   */
  private void purgeTombstones() {
    long[] elsewhere = new long[(highWater + 63) >>> 6]; // cells in the expired list or in the far list
    for (int cell = expiredHead; cell != NIL; cell = (int) cells[2 * cell + 1] & NEXT_MASK) {
      elsewhere[cell >>> 6] |= 1L << cell;
    }
    for (int i = 0; i < farCount; i++) elsewhere[farCells[i] >>> 6] |= 1L << farCells[i];
    for (int[] heads : slotHeads) Arrays.fill(heads, NIL);
    Arrays.fill(levelCells, 0);
    for (int cell = 0; cell < highWater; cell++) {
      if (((freeBits[cell >>> 6] | elsewhere[cell >>> 6]) & (1L << cell)) != 0) continue;
      long word = cells[2 * cell + 1];
      if (stateOf(word) == CANCELLED) {
        releaseTombstone(cell);
      } else {
        place(cell, nextTick, nextTick + (((int) (word >>> 32) - (int) nextTick) & 0xFFFF_FFFFL));
      }
    }
    drainExpired(Long.MIN_VALUE);
    reexamineFar(nextTick);
  }

  private void grow() {
    if (capacity >= MAX_CAPACITY) throw new IllegalStateException("TimeWheel is full: " + capacity + " timers");
    resizeSlab((int) Math.min(MAX_CAPACITY, capacity + (capacity >> 1) + 16L));
  }

  private void resizeSlab(int newCapacity) {
    capacity = newCapacity;
    cells = Arrays.copyOf(cells, 2 * newCapacity);
    hashNext = Arrays.copyOf(hashNext, newCapacity);
    freeBits = Arrays.copyOf(freeBits, (newCapacity + 63) >>> 6);
    freeWords = Arrays.copyOf(freeWords, (freeBits.length + 63) >>> 6);
    if (buckets == null || buckets.length != bucketCountFor(newCapacity)) rehash(bucketCountFor(newCapacity));
  }

  /** Between 2 and 4 cells per bucket when full: short chains while the index stays at 1-2 bytes per timer. */
  private static int bucketCountFor(int capacity) {
    return Integer.highestOneBit(Math.max(16, capacity / 2));
  }

  private void rehash(int bucketCount) {
    buckets = new int[bucketCount];
    Arrays.fill(buckets, NIL);
    bucketMask = bucketCount - 1;
    for (int cell = 0; cell < highWater; cell++) {
      if (state(cell) < KIND_LIMIT) hashInsert(cell);
    }
  }

  private void resetState() {
    highWater = freeCount = allocationWord = 0;
    Arrays.fill(freeBits, 0);
    Arrays.fill(freeWords, 0);
    rehash(buckets.length);
    expiredHead = NIL;
    for (int[] heads : slotHeads) Arrays.fill(heads, NIL);
    Arrays.fill(levelCells, 0);
    farCells = new int[0];
    farDue = new long[0];
    farCount = pending = tombstones = 0;
    Arrays.fill(pendingByKind, 0);
    Arrays.fill(batchSizes, 0);
  }

  /**
   * Order ids created in the same millisecond on one node differ in their low {@link OrderIds#SEQUENCE_BITS} only:
   * they get a run of neighbouring buckets from a base hashed from the rest (a multiplicative hash), so that a burst's
   * schedules and fires touch a few cache lines of the index rather than one each. Other ids scatter as with a plain
   * hash.
   */
  private int bucketOf(long orderId) {
    int base = (int) (((orderId >>> OrderIds.SEQUENCE_BITS) * 0x9E37_79B9_7F4A_7C15L) >>> 32);
    return (base + ((int) orderId & SEQUENCE_MASK)) & bucketMask;
  }

  private void hashInsert(int cell) {
    int bucket = bucketOf(cells[2 * cell]);
    hashNext[cell] = buckets[bucket];
    buckets[bucket] = cell;
  }

  private void hashRemove(int cell) {
    int bucket = bucketOf(cells[2 * cell]);
    int current = buckets[bucket];
    if (current == cell) {
      buckets[bucket] = hashNext[cell];
      return;
    }
    while (hashNext[current] != cell) current = hashNext[current];
    hashNext[current] = hashNext[cell];
  }
}
