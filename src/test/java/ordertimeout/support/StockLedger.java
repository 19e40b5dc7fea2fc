package ordertimeout.support;

import io.vertx.core.json.JsonObject;

import java.net.http.HttpRequest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How much of each SKU the tests put in, as the reference for stock conservation
 * ({@code available + reserved + sold = put in}, see {@link Invariants}). It is written from what the tests
 * asked for, never from what the service reports on its own: every answered {@code PUT /v1/admin/inventory/{sku}}
 * that goes through {@link Api} (setStock or a raw request), and {@link #putIn} for stock a test writes with SQL.
 *
 * <p>The admin call sets {@code available} only. Its answer, read in the statement that set it, gives
 * {@code reserved} at that moment, and the units sold so far (items of PAID orders) are read from the database
 * before the call and after its answer: from then on the SKU must hold {@code available + reserved + sold} in all.
 * Sales only ever grow, so the two readings agree exactly when no payment of that SKU committed during the call;
 * when they differ the moment of the set is unknown and the SKU is marked untrackable, which fails the check
 * instead of guessing. Emptied with the database ({@link TestDatabase#reset()}).
 */
public final class StockLedger {
  private static final Pattern INVENTORY_PATH = Pattern.compile("^/v1/admin/inventory/([^/?]+)$");
  /** The units put in per SKU; -1 for a SKU whose stock was set while payments of it committed. */
  private static final Map<String, Long> PUT_IN = new ConcurrentHashMap<>();
  private static final long UNTRACKABLE = -1;

  private StockLedger() {}

  /** Stock a test put in behind the API's back (SQL): {@code units} more of {@code sku} in all. */
  public static void putIn(String sku, long units) {
    PUT_IN.merge(sku, units, (was, more) -> was == UNTRACKABLE ? UNTRACKABLE : was + more);
  }

  /** The units put in per SKU so far, {@code -1} for one whose set raced with its payments. */
  static Map<String, Long> putIn() {
    return Map.copyOf(PUT_IN);
  }

  static boolean isUntrackable(long units) {
    return units == UNTRACKABLE;
  }

  static void clear() {
    PUT_IN.clear();
  }

  /** A stock write on its way: the SKU and the units sold before it was sent. */
  record Write(String sku, long soldBefore) {}

  /** Called before {@code request} is sent: a write when it sets a SKU's stock, else null. */
  static Write before(HttpRequest request) {
    if (!request.method().equals("PUT")) {
      return null;
    }
    Matcher path = INVENTORY_PATH.matcher(request.uri().getPath());
    return path.matches() ? new Write(path.group(1), sold(path.group(1))) : null;
  }

  /** Called with the answer to a write: a 200 sets the SKU's reference. */
  static void after(Write write, int status, String body) {
    if (write == null || status != 200) {
      return;
    }
    JsonObject stock = new JsonObject(body);
    long soldAfter = sold(write.sku());
    PUT_IN.put(write.sku(), soldAfter == write.soldBefore()
        ? stock.getLong("available") + stock.getLong("reserved") + soldAfter
        : UNTRACKABLE);
  }

  /** Units of {@code sku} in PAID orders. */
  static long sold(String sku) {
    return KeptConnection.count("""
        SELECT coalesce(sum(i.qty), 0) FROM order_items i JOIN orders o ON o.id = i.order_id
        WHERE i.sku = ? AND o.status = 'PAID'""", sku);
  }
}
