package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import ordertimeout.order.OrderIds;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The partitions of orders and order_items (V11): ranges of order ids, which are ranges of time. Each orders partition
 * has an order_items partition of the same range. Creates partitions ahead of the clock, and takes out old partitions
 * whose orders are all finished (PAID or CLOSED): counted, then detached and dropped (or moved to the orders_archive
 * schema), which holds the lock on orders for the same time whatever the rows, then one empty partition covers the
 * range they left, so every id below the newest partition still has a place (a stray old id is stored, not refused)
 * and the partitions below the retention window are only those still holding an unpaid order and one empty filler
 * between them.
 *
 * <p>Partition names come from the catalog or are made here from dates; identifiers cannot be bound as parameters, so
 * each is quoted ({@link #quoted}).
 */
public final class OrderPartitions {
  public static final String ORDERS = "orders";
  public static final String ITEMS = "order_items";
  public static final String ARCHIVE_SCHEMA = "orders_archive";
  private static final long DAY_MILLIS = 86_400_000L;
  private static final Pattern BOUNDS = Pattern.compile("FROM \\('?([^')]+)'?\\) TO \\('?([^')]+)'?\\)");
  private static final DateTimeFormatter DAY = DateTimeFormatter.ofPattern("yyyyMMdd");

  private final Pool pool;
  private final int lockTimeoutMillis;
  private final StatusCache statusCache;

  /** {@code statusCache}: forgets every order once partitions were taken out. */
  public OrderPartitions(Pool pool, int lockTimeoutMillis, StatusCache statusCache) {
    this.pool = pool;
    this.lockTimeoutMillis = lockTimeoutMillis;
    this.statusCache = statusCache;
  }

  /** A partition of {@code table}: ids in [{@code from}, {@code to}); MINVALUE is {@link Long#MIN_VALUE}. */
  public record Partition(String name, long from, long to) {}

  /** One partition of orders taken out, with its items' partition: the rows in each. */
  public record Dropped(String name, long orders, long items) {}

  /** What a run took out: each partition of orders (the empty ones merged into a filler are not counted). */
  public record Result(List<Dropped> partitions) {
    static final Result NONE = new Result(List.of());

    public int dropped() {
      return partitions.size();
    }

    public long orders() {
      return partitions.stream().mapToLong(Dropped::orders).sum();
    }

    public long items() {
      return partitions.stream().mapToLong(Dropped::items).sum();
    }

    public List<String> droppedNames() {
      return partitions.stream().map(Dropped::name).toList();
    }

    Result plus(Result other) {
      List<Dropped> all = new ArrayList<>(partitions);
      all.addAll(other.partitions);
      return new Result(List.copyOf(all));
    }
  }

  /** The partitions of {@code table} in id order. */
  public Future<List<Partition>> list(String table) {
    return pool.preparedQuery(Sql.LIST_PARTITIONS).execute(io.vertx.sqlclient.Tuple.of(table)).map(rows -> {
      List<Partition> partitions = new ArrayList<>();
      for (Row row : rows) {
        Matcher m = BOUNDS.matcher(row.getString("bound"));
        if (!m.find()) {
          throw new IllegalStateException("partition " + row.getString("name") + " of " + table + " is not a range: "
              + row.getString("bound"));
        }
        partitions.add(new Partition(row.getString("name"), bound(m.group(1)), bound(m.group(2))));
      }
      partitions.sort(Comparator.comparingLong(Partition::from));
      return List.copyOf(partitions);
    });
  }

  /**
   * Creates partitions of {@code partitionDays} days each (UTC days) above the newest one until ids of
   * {@code untilMillis} have one; answers how many ranges were created.
   */
  public Future<Integer> createAhead(long untilMillis, int partitionDays) {
    return list(ORDERS).compose(partitions -> {
      long top = partitions.isEmpty() ? OrderIds.firstIdAt(dayStart(untilMillis)) : partitions.get(partitions.size() - 1).to();
      long until = OrderIds.firstIdAt(untilMillis);
      if (top == Long.MAX_VALUE || top > until) {
        return Future.succeededFuture(0);
      }
      List<long[]> ranges = new ArrayList<>();
      for (long from = top; from <= until; ) {
        long to = OrderIds.firstIdAt(dayStart(OrderIds.millisOf(from)) + partitionDays * DAY_MILLIS);
        ranges.add(new long[] {from, to});
        from = to;
      }
      return pool.withTransaction(conn -> {
        Future<Void> chain = lockTimeout(conn);
        for (long[] range : ranges) {
          chain = chain.compose(none -> createBoth(conn, range[0], range[1]));
        }
        return chain;
      }).map(ranges.size());
    });
  }

  /**
   * Takes out the partitions whose range ended before {@code cutoffMillis} and whose orders are all finished, each
   * maximal run of neighbours in one transaction: detached, then dropped ({@code archive} false) or moved to
   * {@value #ARCHIVE_SCHEMA}, and one empty partition created over the run's range. An empty partition alone between
   * kept ones is left as it is.
   */
  public Future<Result> dropFinished(long cutoffMillis, boolean archive) {
    long cutoff = OrderIds.firstIdAt(cutoffMillis);
    return list(ORDERS).compose(orders -> list(ITEMS).compose(items -> {
      Map<String, Partition> itemsByRange = items.stream().collect(Collectors.toMap(OrderPartitions::rangeKey, Function.identity()));
      List<Partition> old = orders.stream().filter(p -> p.to() <= cutoff).toList();
      return classify(old).compose(kinds -> {
        List<List<Partition>> runs = runs(old, kinds);
        Future<Result> chain = Future.succeededFuture(Result.NONE);
        for (List<Partition> run : runs) {
          chain = chain.compose(soFar -> dropRun(run, itemsByRange, archive).map(soFar::plus));
        }
        return chain;
      });
    })).andThen(done -> {
      if (done.failed() || !done.result().partitions().isEmpty()) {
        statusCache.forgetAll();
      }
    });
  }

  private enum Kind { KEEP, FINISHED, EMPTY }

  private Future<List<Kind>> classify(List<Partition> partitions) {
    Future<List<Kind>> chain = Future.succeededFuture(new ArrayList<>());
    for (Partition p : partitions) {
      chain = chain.compose(kinds -> pool.query(Sql.partitionContents(quoted(p.name()))).execute().map(rows -> {
        Row row = rows.iterator().next();
        kinds.add(row.getBoolean("unpaid") ? Kind.KEEP : row.getBoolean("any") ? Kind.FINISHED : Kind.EMPTY);
        return kinds;
      }));
    }
    return chain;
  }

  /** Maximal runs of neighbouring partitions without an unpaid order, but not an empty one alone. */
  private static List<List<Partition>> runs(List<Partition> partitions, List<Kind> kinds) {
    List<List<Partition>> runs = new ArrayList<>();
    List<Partition> run = new ArrayList<>();
    boolean hasRows = false;
    for (int i = 0; i <= partitions.size(); i++) {
      boolean ends = i == partitions.size() || kinds.get(i) == Kind.KEEP
          || (!run.isEmpty() && run.get(run.size() - 1).to() != partitions.get(i).from());
      if (ends) {
        if (hasRows || run.size() > 1) {
          runs.add(List.copyOf(run));
        }
        run.clear();
        hasRows = false;
      }
      if (i < partitions.size() && kinds.get(i) != Kind.KEEP) {
        run.add(partitions.get(i));
        hasRows |= kinds.get(i) == Kind.FINISHED;
      }
    }
    return runs;
  }

  private Future<Result> dropRun(List<Partition> run, Map<String, Partition> itemsByRange, boolean archive) {
    long from = run.get(0).from();
    long to = run.get(run.size() - 1).to();
    return counted(run, itemsByRange).compose(counts -> pool.withTransaction(conn -> {
      Future<Result> chain = lockTimeout(conn).map(Result.NONE);
      for (int i = 0; i < run.size(); i++) {
        Partition p = run.get(i);
        Dropped rows = counts.get(i);
        chain = chain.compose(soFar -> takeOut(conn, p, itemsByRange.get(rangeKey(p)), rows, archive).map(soFar::plus));
      }
      return chain.compose(result -> createBoth(conn, from, to).map(result));
    }));
  }

  /**
   * The rows of each partition of the run and of its items' partition, counted before the transaction that detaches
   * them: a count reads the whole partition, and while the detach's ACCESS EXCLUSIVE lock on orders and order_items
   * is held, every statement on them waits. An old partition's counts do not change before the detach: nothing
   * deletes orders or items, pays, late pays and reopens of its finished orders change no count, and only a create of
   * an id that old (a node's clock far behind) inserts, an UNPAID order, which the check under the lock finds (paid
   * meanwhile, it would be missing from the figures only; a pair counted empty is checked for any row, see takeOut).
   */
  private Future<List<Dropped>> counted(List<Partition> run, Map<String, Partition> itemsByRange) {
    Future<List<Dropped>> chain = Future.succeededFuture(new ArrayList<>());
    for (Partition p : run) {
      Partition items = itemsByRange.get(rangeKey(p));
      String statement = Sql.partitionRows(quoted(p.name()), items == null ? null : quoted(items.name()));
      chain = chain.compose(counts -> pool.query(statement).execute().map(rows -> {
        Row row = rows.iterator().next();
        counts.add(new Dropped(p.name(), row.getLong("orders"), row.getLong("items")));
        return counts;
      }));
    }
    return chain;
  }

  /**
   * Detaches one partition (and its items' partition) counted {@code rows} before: from then on no statement can write
   * to it, so the check that none of its orders is unpaid, made again here by index, holds; a failed check rolls the
   * whole run back. Nothing here reads the partition whole: every statement on orders waits until the commit.
   */
  private Future<Result> takeOut(SqlConnection conn, Partition orders, Partition items, Dropped rows, boolean archive) {
    String o = quoted(orders.name());
    String i = items == null ? null : quoted(items.name());
    boolean empty = rows.orders() == 0 && rows.items() == 0;
    Future<Void> detached = conn.query(Sql.detachPartition(ORDERS, o)).execute().mapEmpty();
    if (items != null) {
      detached = detached.compose(none -> conn.query(Sql.detachPartition(ITEMS, i)).execute().mapEmpty());
    }
    return detached
        .compose(none -> conn.query(Sql.detachedChecks(o, i, empty)).execute())
        .compose(checked -> {
          Row row = checked.iterator().next();
          if (row.getBoolean("unpaid")) {
            return Future.failedFuture(new IllegalStateException("partition " + orders.name() + " got an unpaid order"));
          }
          if (row.getBoolean("written")) { // not dropped as empty: left to the next run, which counts and archives it
            return Future.failedFuture(
                new IllegalStateException("partition " + orders.name() + " got rows after its count"));
          }
          if (empty) { // an empty one merged into the run: nothing to keep
            return dropOrArchive(conn, orders, items, false).map(Result.NONE);
          }
          return dropOrArchive(conn, orders, items, archive).map(new Result(List.of(rows)));
        });
  }

  private static Future<Void> dropOrArchive(SqlConnection conn, Partition orders, Partition items, boolean archive) {
    List<Partition> both = items == null ? List.of(orders) : List.of(orders, items);
    Future<Void> chain = Future.succeededFuture();
    for (Partition p : both) {
      String statement = archive ? Sql.archivePartition(quoted(p.name()), quoted(archivedName(p)), quoted(ARCHIVE_SCHEMA))
          : Sql.dropTable(quoted(p.name()));
      chain = chain.compose(none -> conn.query(statement).execute().mapEmpty());
    }
    return chain;
  }

  private Future<Void> createBoth(SqlConnection conn, long from, long to) {
    return conn.query(Sql.createPartition(quoted(name(ORDERS, from)), ORDERS, from, to)).execute()
        .compose(none -> conn.query(Sql.createPartition(quoted(name(ITEMS, from)), ITEMS, from, to)).execute())
        .compose(none -> conn.query(Sql.SUMMARIZE_ORDER_PARTITIONS_AS_RANGES_FILL).execute())
        .mapEmpty();
  }

  private Future<Void> lockTimeout(SqlConnection conn) {
    // DETACH waits for every transaction on the table and holds up those after it while it waits: not for long
    return conn.query("SET LOCAL lock_timeout = " + lockTimeoutMillis).execute().mapEmpty();
  }

  /** orders_p20261201 for a range from that day's first id; orders_p_floor for the one from MINVALUE. */
  public static String name(String table, long from) {
    if (from == Long.MIN_VALUE) {
      return table + "_p_floor";
    }
    LocalDate day = Instant.ofEpochMilli(OrderIds.millisOf(from)).atZone(ZoneOffset.UTC).toLocalDate();
    return table + "_p" + DAY.format(day);
  }

  /** Archived partitions keep their name and the day their range ends, so two of the same start do not collide. */
  private static String archivedName(Partition p) {
    LocalDate end = Instant.ofEpochMilli(OrderIds.millisOf(p.to())).atZone(ZoneOffset.UTC).toLocalDate();
    return p.name() + "_to_" + DAY.format(end);
  }

  /** The start (00:00 UTC) of the day of {@code millis}. */
  public static long dayStart(long millis) {
    return Math.floorDiv(millis, DAY_MILLIS) * DAY_MILLIS;
  }

  private static String rangeKey(Partition p) {
    return p.from() + ".." + p.to();
  }

  private static long bound(String text) {
    return switch (text) {
      case "MINVALUE" -> Long.MIN_VALUE;
      case "MAXVALUE" -> Long.MAX_VALUE;
      default -> Long.parseLong(text);
    };
  }

  /** An identifier as SQL text: in double quotes, a double quote in it doubled. */
  static String quoted(String identifier) {
    return '"' + identifier.replace("\"", "\"\"") + '"';
  }
}
