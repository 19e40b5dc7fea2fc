package ordertimeout.store;

import java.util.List;
import java.util.function.ToLongFunction;

/**
 * A page of a list read by keyset on an id, and the id the page after starts from; {@code next} is null on the last
 * page. The list's statement reads one row more than the page holds, to tell a last page that happens to be full
 * from one with more after it.
 */
public record KeysetPage<T>(List<T> items, Long next) {
  /** The page of {@code limit} items out of {@code read}, the up to {@code limit + 1} rows of the statement. */
  static <T> KeysetPage<T> of(List<T> read, int limit, ToLongFunction<T> id) {
    if (read.size() <= limit) {
      return new KeysetPage<>(List.copyOf(read), null);
    }
    List<T> shown = List.copyOf(read.subList(0, limit));
    return new KeysetPage<>(shown, id.applyAsLong(shown.get(limit - 1)));
  }
}
