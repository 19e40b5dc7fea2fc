package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import ordertimeout.order.Order;
import ordertimeout.order.OrderFilter;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/**
 * Operators' and clients' searches: pages of the orders matching a filter, newest first, by keyset on the id (the next
 * page starts below the last id of this one, so orders created meanwhile cause neither duplicates nor gaps).
 */
public final class OrderSearch {
  private final Pool pool;

  public OrderSearch(Pool pool) {
    this.pool = pool;
  }

  /** The conditions of a filter as SQL with numbered parameters, and their values in order. */
  record Where(String sql, List<Object> values) {
    Tuple tuple(Object... more) {
      Tuple tuple = Tuple.tuple();
      values.forEach(tuple::addValue);
      for (Object value : more) tuple.addValue(value);
      return tuple;
    }

    int next() {
      return values.size() + 1;
    }
  }

  /** Up to {@code limit} matching orders with ids below {@code belowId} (null: from the newest). */
  public Future<KeysetPage<Order>> page(OrderFilter filter, Long belowId, int limit) {
    Where where = where(filter, belowId);
    return pool.preparedQuery(Sql.searchPage(where.sql(), where.next())).execute(where.tuple(limit + 1)).map(rows -> {
      List<Order> orders = new ArrayList<>(rows.size());
      for (Row row : rows) orders.add(OrderStore.toOrder(row));
      return KeysetPage.of(orders, limit, Order::id);
    });
  }

  /** How many orders match now (a bulk action's dry run). */
  public Future<Long> count(OrderFilter filter) {
    Where where = where(filter, null);
    return pool.preparedQuery(Sql.countMatches(where.sql())).execute(where.tuple())
        .map(rows -> rows.iterator().next().getLong("total"));
  }

  /** The filter's conditions, each value bound; {@code belowId} adds the keyset condition. */
  static Where where(OrderFilter filter, Long belowId) {
    List<String> conditions = new ArrayList<>();
    List<Object> values = new ArrayList<>();
    add(conditions, values, Sql.MATCH_STATUS, filter.status() == null ? null : filter.status().name());
    add(conditions, values, Sql.MATCH_CLIENT, filter.client());
    add(conditions, values, Sql.MATCH_USER, filter.userId());
    add(conditions, values, Sql.MATCH_SKU, filter.sku());
    add(conditions, values, Sql.MATCH_DUE_AFTER, time(filter.dueAfter()));
    add(conditions, values, Sql.MATCH_DUE_BEFORE, time(filter.dueBefore()));
    add(conditions, values, Sql.MATCH_CREATED_AFTER, time(filter.createdAfter()));
    add(conditions, values, Sql.MATCH_CREATED_BEFORE, time(filter.createdBefore()));
    add(conditions, values, Sql.MATCH_BELOW_ID, belowId);
    return new Where(conditions.isEmpty() ? Sql.MATCH_ANY : String.join(" AND ", conditions), List.copyOf(values));
  }

  private static void add(List<String> conditions, List<Object> values, String condition, Object value) {
    if (value != null) {
      values.add(value);
      conditions.add(condition.formatted(values.size()));
    }
  }

  private static OffsetDateTime time(Instant instant) {
    return instant == null ? null : instant.atOffset(ZoneOffset.UTC);
  }
}
