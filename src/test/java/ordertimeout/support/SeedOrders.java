package ordertimeout.support;

import ordertimeout.clock.WallClock;
import ordertimeout.order.OrderIds;

import java.util.Arrays;

/**
 * Unpaid orders written straight into the database, behind the service's back (as another node, or a
 * node that died before its timers travelled, would leave them): each of one unit of a SKU whose
 * reservation is counted, so that the invariants hold. Deadlines are whole seconds of the database
 * clock plus whole milliseconds, so that a wheel that fires them never fires before the database
 * agrees they are due.
 */
public final class SeedOrders {
  /** A node id no test node uses: seeded ids never collide with the service's own. */
  private static final OrderIds IDS = new OrderIds(1000, WallClock.SYSTEM);

  private SeedOrders() {}

  /** {@code count} fresh order ids whose shard ({@link OrderIds#shardOf}) is {@code shard}. */
  public static long[] idsInShard(int shard, int count) {
    long[] ids = new long[count];
    for (int found = 0; found < count; ) {
      long id = IDS.next();
      if (OrderIds.shardOf(id, TestDatabase.SHARDS) == shard) {
        ids[found++] = id;
      }
    }
    return ids;
  }

  /**
   * Inserts unpaid orders {@code ids}, the i-th (from 0) due at {@code closeInMillis + i * stepMillis}
   * after the current whole second of the database clock (a step of 0 gives them all the same
   * deadline), with a reminder {@code remindBeforeMillis} before it, or none when that is null.
   */
  public static void insert(String sku, long[] ids, long closeInMillis, long stepMillis, Long remindBeforeMillis) {
    Long[] boxed = Arrays.stream(ids).boxed().toArray(Long[]::new);
    Integer[] shards = Arrays.stream(ids).mapToObj(id -> OrderIds.shardOf(id, TestDatabase.SHARDS)).toArray(Integer[]::new);
    if (Sql.count("SELECT count(*) FROM inventory WHERE sku = ?", sku) == 0) {
      Sql.execute("INSERT INTO inventory (sku, available) VALUES (?, 1000000)", sku);
      StockLedger.putIn(sku, 1_000_000);
    }
    // the seeded orders' units are reserved on top of what is available: put in with them
    StockLedger.putIn(sku, ids.length);
    Sql.execute("""
        WITH input AS (
          SELECT id, shard, date_trunc('second', now()) + (? + (n - 1) * ?) * interval '1 millisecond' AS close_at
          FROM unnest(?::bigint[], ?::int[]) WITH ORDINALITY AS t (id, shard, n)),
        o AS (
          INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at, remind_at)
          SELECT id, shard, 'dev-user', 'u-seeded', 'physical', 'UNPAID', now(), close_at,
                 close_at - ?::bigint * interval '1 millisecond'
          FROM input
          RETURNING id),
        items AS (
          INSERT INTO order_items (order_id, sku, qty) SELECT id, ?, 1 FROM o)
        UPDATE inventory SET reserved = reserved + (SELECT count(*) FROM o) WHERE sku = ?""",
        closeInMillis, stepMillis, boxed, shards, remindBeforeMillis, sku, sku);
  }
}
