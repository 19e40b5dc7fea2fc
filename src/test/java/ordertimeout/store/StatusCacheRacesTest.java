package ordertimeout.store;

import io.vertx.core.Future;
import ordertimeout.order.Order;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderStatus;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The status cache's rules, without a database: a read that went to PostgreSQL, and a write that hands over the orders
 * it committed, keep nothing when another write of that order ended meanwhile or is under way; nor does a create under
 * another id than its ticket's; a failed write forgets too; and no read ever returns an order older than what was
 * committed when the read began, though the write that committed it has not ended yet (an event of it may already be
 * out): threads racing on a few orders, each order's "database" a version number, two writes in three handing over
 * what they committed (one in three built on the entry the write began with, as a close batch does).
 */
class StatusCacheRacesTest {
  private static final String CLIENT = "shop-a";

  @Test
  void aReadKeepsWhatItFoundOnlyWhenNoWriteOfItsOrderEndedOrRunsMeanwhile() {
    StatusCache cache = new StatusCache(100);
    long ticket = cache.ticket(1);
    cache.keep(1, ticket, CLIENT, order(1, 0));
    assertThat(cache.get(1).order().createdAt()).isEqualTo(Instant.ofEpochSecond(0));
    assertThat(cache.get(1).visibleTo(CLIENT)).isTrue();
    assertThat(cache.get(1).visibleTo(null)).as("an admin").isTrue();
    assertThat(cache.get(1).visibleTo("shop-b")).isFalse();
    assertThat(cache.get(1).json()).as("the kept order's answer").isEqualTo(order(1, 0).toJson().encode())
        .isSameAs(cache.get(1).json());

    long before = cache.ticket(1);
    cache.begin(new Long[] {1L});
    assertThat(cache.get(1)).as("while a write runs").isNull();
    cache.keep(1, cache.ticket(1), CLIENT, order(1, 1));
    assertThat(cache.get(1)).as("kept while a write runs").isNull();
    cache.end(new Long[] {1L});
    assertThat(cache.get(1)).as("forgotten when the write ended").isNull();

    cache.keep(1, before, CLIENT, order(1, 1));
    assertThat(cache.get(1)).as("a read that began before the write ended").isNull();
    cache.keep(1, cache.ticket(1), CLIENT, order(1, 2));
    assertThat(cache.get(1)).isNotNull();
  }

  @Test
  void aWriteKeepsTheOrdersItCommittedOnlyWhenNoOtherWriteOfThemEndedOrRunsMeanwhile() {
    StatusCache cache = new StatusCache(100);
    Long[] one = {1L};
    assertThat(committing(cache, one, order(1, 1), () -> { }).succeeded()).isTrue();
    assertThat(cache.get(1).order().createdAt()).as("kept as committed").isEqualTo(Instant.ofEpochSecond(1));

    committing(cache, one, order(1, 2), () -> {
      cache.begin(one);
      cache.end(one);
    });
    assertThat(cache.get(1)).as("another write of it ended meanwhile").isNull();

    cache.begin(one);
    committing(cache, one, order(1, 3), () -> { });
    assertThat(cache.get(1)).as("another write of it is under way").isNull();
    cache.end(one);
    assertThat(cache.get(1)).as("once that write ended").isNull();

    committing(cache, new Long[] {1L, 2L}, order(1, 4), () -> cache.end(new Long[] {3L}));
    assertThat(cache.get(1)).as("only a write of another order ended meanwhile").isNotNull();
    assertThat(cache.get(2)).as("what the write did not hand over").isNull();

    Future<Void> failed = cache.writing(one, write -> {
      write.committed(CLIENT, order(1, 5));
      return Future.failedFuture("the commit's outcome is unknown");
    });
    assertThat(failed.failed()).isTrue();
    assertThat(cache.get(1)).as("after a failed write").isNull();
  }

  /** A write that did not end keeps nothing when a later write of the same order ended first. */
  @Test
  void aWriteThatEndsAfterALaterWriteOfItsOrderKeepsNothing() {
    StatusCache cache = new StatusCache(100);
    Long[] one = {1L};
    StatusCache.Write earlier = cache.beginWrite(one);
    earlier.committed(CLIENT, order(1, 1));
    StatusCache.Write later = cache.beginWrite(one);
    later.committed(CLIENT, order(1, 2));
    cache.end(one, later);
    assertThat(cache.get(1)).as("the earlier write still runs").isNull();
    cache.end(one, earlier);
    assertThat(cache.get(1)).isNull();
  }

  /** A write listing an order twice counts both its ends as its own. */
  @Test
  void aWriteOfAnOrderListedTwiceKeepsIt() {
    StatusCache cache = new StatusCache(100);
    Long[] twice = {1L, 1L};
    committing(cache, twice, order(1, 1), () -> { });
    assertThat(cache.get(1)).isNotNull();
    committing(cache, twice, order(1, 2), () -> cache.end(new Long[] {1L}));
    assertThat(cache.get(1)).as("another write of it ended meanwhile").isNull();
  }

  /**
   * An order a write built from an entry, changing a few fields, is as old as that entry: answered no longer than an
   * entry read then, though the cache's own expiry counts from the write.
   */
  @Test
  void anOrderBuiltOnAKeptEntryIsAnsweredNoLongerThanThatEntry() throws InterruptedException {
    StatusCache cache = new StatusCache(100, Duration.ofSeconds(3));
    long start = System.nanoTime();
    cache.keep(1, cache.ticket(1), CLIENT, order(1, 0));
    Thread.sleep(2_000);
    cache.writing(new Long[] {1L}, write -> {
      StatusCache.Entry kept = write.before(1);
      write.committed(kept.changedTo(order(1, 1)));
      return Future.succeededFuture();
    });
    cache.keep(2, cache.ticket(2), CLIENT, order(2, 0));
    Thread.sleep(Math.max(0, TimeUnit.NANOSECONDS.toMillis(start + 3_300_000_000L - System.nanoTime())));
    assertThat(cache.get(2)).as("read 2 s after the first, still kept").isNotNull();
    assertThat(cache.get(1)).as("built on an entry read 3.3 s ago").isNull();
  }

  @Test
  void aWriteSeesTheOrdersAsKeptWhenItBegan() {
    StatusCache cache = new StatusCache(100);
    cache.keep(1, cache.ticket(1), CLIENT, order(1, 0));
    StatusCache.Write write = cache.beginWrite(new Long[] {1L, 2L});
    assertThat(write.before(1).order()).isEqualTo(order(1, 0));
    assertThat(write.before(1).visibleTo("shop-b")).as("kept as its client's").isFalse();
    assertThat(write.before(2)).as("not kept").isNull();
    StatusCache.Write second = cache.beginWrite(new Long[] {1L});
    assertThat(second.before(1)).as("while another write of it runs").isNull();
  }

  /** Its upkeep runs on the writing thread (an event loop), not handed to a pool thread that each write would wake. */
  @Test
  void theWriteThatGoesPastTheBoundEvictsBeforeItReturns() {
    StatusCache cache = new StatusCache(100);
    for (long id = 1; id <= 1_000; id++) {
      cache.keep(id, cache.ticket(id), CLIENT, order(id, 0));
      assertThat(cache.size()).as("after keeping order %d", id).isLessThanOrEqualTo(100);
    }
  }

  /**
   * A full cache takes the newest orders in place of the oldest, read or not: a buyer's page reads the order it has
   * just created. A cache that weighs how often each was read (Caffeine's) kept the old ones and turned the new away.
   */
  @Test
  void newOrdersTakeThePlaceOfTheOldestWhenTheCacheIsFull() {
    StatusCache cache = new StatusCache(1_000);
    for (long id = 1; id <= 1_000; id++) {
      cache.keep(id, cache.ticket(id), CLIENT, order(id, 0));
    }
    for (long id = 1; id <= 500; id++) {
      assertThat(cache.get(id)).as("order %d, read once", id).isNotNull();
    }
    for (long id = 1_001; id <= 2_000; id++) {
      cache.keep(id, cache.ticket(id), CLIENT, order(id, 0));
    }
    for (long id = 1_001; id <= 2_000; id++) {
      assertThat(cache.get(id)).as("new order %d", id).isNotNull();
    }
    assertThat(cache.get(1)).as("the oldest").isNull();
    assertThat(cache.size()).isEqualTo(1_000);
  }

  @Test
  void anEntryIsNotHeldPastItsTime() throws InterruptedException {
    StatusCache cache = new StatusCache(100, Duration.ofMillis(200));
    cache.keep(1, cache.ticket(1), CLIENT, order(1, 0));
    Thread.sleep(300);
    cache.keep(2, cache.ticket(2), CLIENT, order(2, 0));
    assertThat(cache.get(1)).isNull();
    assertThat(cache.size()).as("the expired one evicted by the next keep").isEqualTo(1);
  }

  @Test
  void aWriteThatFailedForgetsItsOrdersToo() {
    StatusCache cache = new StatusCache(100);
    cache.keep(7, cache.ticket(7), CLIENT, order(7, 0));
    Future<Void> failed = cache.writing(new Long[] {7L}, () -> Future.failedFuture("the commit's outcome is unknown"));
    assertThat(failed.failed()).isTrue();
    assertThat(cache.get(7)).isNull();
  }

  /** A ticket counts one stripe's writes: a create stored under another id (its id was taken) keeps nothing. */
  @Test
  void aCreateKeepsItsOrderOnlyUnderTheIdOfItsTicket() {
    StatusCache cache = new StatusCache(100);
    OrderStore store = new OrderStore(null, false, Duration.ofSeconds(1), cache);
    cache.end(new Long[] {1L});
    long ticketOfOne = store.createTicket(1);
    cache.end(new Long[] {2L}); // a write of order 2 ended after that ticket; each stripe counted one write
    store.created(1, ticketOfOne, CLIENT, order(2, 0));
    assertThat(cache.get(2)).isNull();

    store.created(1, ticketOfOne, CLIENT, order(1, 0));
    assertThat(cache.get(1)).as("under its own id").isNotNull();
  }

  @Test
  void forgettingAllRefusesTheReadsUnderWay() {
    StatusCache cache = new StatusCache(100);
    cache.keep(1, cache.ticket(1), CLIENT, order(1, 0));
    long underWay = cache.ticket(2);
    cache.forgetAll();
    cache.keep(2, underWay, CLIENT, order(2, 0));
    assertThat(cache.get(1)).isNull();
    assertThat(cache.get(2)).isNull();
  }

  /**
   * A node's cache answers only while its lease vouches that it is alone, forgets what it kept when that word ran out
   * before the next came, and answers nothing for good once another node was seen.
   */
  @Test
  void aNodesCacheAnswersOnlyWhileItsLeaseVouchesThatItIsAlone() {
    StatusCache cache = StatusCache.whileAlone(100);
    cache.keep(1, cache.ticket(1), CLIENT, order(1, 0));
    assertThat(cache.get(1)).as("before the lease's first word").isNull();

    cache.aloneUntil(System.nanoTime() + TimeUnit.SECONDS.toNanos(60));
    cache.keep(1, cache.ticket(1), CLIENT, order(1, 0));
    assertThat(cache.get(1)).isNotNull();
    cache.aloneUntil(System.nanoTime() + TimeUnit.SECONDS.toNanos(60));
    assertThat(cache.get(1)).as("vouched for again before the word ran out: kept").isNotNull();

    cache.aloneUntil(System.nanoTime() - 1);
    assertThat(cache.get(1)).as("the word ran out").isNull();
    cache.aloneUntil(System.nanoTime() + TimeUnit.SECONDS.toNanos(60));
    assertThat(cache.get(1)).as("vouched for again after a gap: forgotten").isNull();

    cache.keep(2, cache.ticket(2), CLIENT, order(2, 0));
    assertThat(cache.get(2)).isNotNull();
    assertThat(cache.on()).isTrue();
    assertThat(cache.sharedWithAnotherNode()).as("it was on").isTrue();
    assertThat(cache.sharedWithAnotherNode()).as("once").isFalse();
    assertThat(cache.on()).isFalse();
    assertThat(cache.get(2)).isNull();
    cache.aloneUntil(System.nanoTime() + TimeUnit.SECONDS.toNanos(60));
    cache.keep(3, cache.ticket(3), CLIENT, order(3, 0));
    assertThat(cache.get(3)).as("off for good").isNull();
  }

  @Test
  void offKeepsNothing() {
    StatusCache.OFF.keep(1, StatusCache.OFF.ticket(1), CLIENT, order(1, 0));
    assertThat(StatusCache.OFF.get(1)).isNull();
  }

  @Test
  void noReadReturnsAnOrderOlderThanWhatWasCommittedWhenItBegan() throws Exception {
    int orders = 8;
    StatusCache cache = new StatusCache(1000);
    AtomicLongArray database = new AtomicLongArray(orders);
    AtomicLong reads = new AtomicLong();
    AtomicLong hits = new AtomicLong();
    AtomicReference<String> stale = new AtomicReference<>();
    long until = System.nanoTime() + 1_500_000_000L;
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      threads.add(new Thread(() -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (System.nanoTime() < until) {
          int id = random.nextInt(orders);
          Long[] ids = {(long) id};
          switch (random.nextInt(3)) {
            case 0 -> {
              cache.begin(ids);
              database.incrementAndGet(id); // the commit
              cache.end(ids);
            }
            case 1 -> cache.writing(ids, write -> { // keeps what it committed, as a pay group
              write.committed(CLIENT, order(id, database.incrementAndGet(id)));
              return Future.succeededFuture();
            });
            default -> cache.writing(ids, write -> { // keeps the entry it began with, changed, as a close batch
              StatusCache.Entry kept = write.before(id);
              database.incrementAndGet(id);
              if (kept != null) {
                write.committed(kept.changedTo(order(id, kept.order().createdAt().getEpochSecond() + 1)));
              }
              return Future.succeededFuture();
            });
          }
        }
      }));
    }
    for (int t = 0; t < 2; t++) {
      threads.add(new Thread(() -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (System.nanoTime() < until && stale.get() == null) {
          int id = random.nextInt(orders);
          long mustSee = database.get(id);
          StatusCache.Entry kept = cache.get(id);
          long seen;
          if (kept != null) {
            hits.incrementAndGet();
            seen = kept.order().createdAt().getEpochSecond();
          } else {
            long ticket = cache.ticket(id);
            seen = database.get(id);
            cache.keep(id, ticket, CLIENT, order(id, seen));
          }
          reads.incrementAndGet();
          if (seen < mustSee) {
            stale.compareAndSet(null, "order " + id + ": read version " + seen + " after version " + mustSee + " was committed");
          }
        }
      }));
    }
    threads.forEach(Thread::start);
    for (Thread thread : threads) thread.join();

    assertThat(stale.get()).as("a stale read (of %d reads, %d hits)", reads.get(), hits.get()).isNull();
    assertThat(hits.get()).as("the cache answered some of the %d reads", reads.get()).isPositive();
  }

  /** A write of {@code ids} that commits {@code order} while {@code meanwhile} runs. */
  private static Future<Void> committing(StatusCache cache, Long[] ids, Order order, Runnable meanwhile) {
    return cache.writing(ids, write -> {
      meanwhile.run();
      write.committed(CLIENT, order);
      return Future.succeededFuture();
    });
  }

  /** An order whose creation second stands for its version. */
  private static Order order(long id, long version) {
    return new Order(id, "u-1", "physical", OrderStatus.UNPAID, null, List.of(new OrderItem("SKU-1", 1)),
        Instant.ofEpochSecond(version), Instant.ofEpochSecond(version + 600), null, null, null, null);
  }
}
