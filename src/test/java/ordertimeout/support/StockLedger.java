package ordertimeout.support;

import io.vertx.core.json.JsonObject;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpRequest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How much of each SKU the tests put in, as the reference for stock conservation
 * ({@code available + reserved + sold = put in}, see {@link Invariants}). It is written from what the tests
 * asked for, never from what the service reports on its own: every answered {@code PUT /v1/admin/inventory/{sku}}
 * that goes through {@link Api} (setStock or a raw request), and {@link #putIn} for stock a test writes with SQL.
 *
 * <p>The admin call sets {@code available} only: to the number in the request, which is what the record takes (not
 * what the service answers it set). The answer, read in the statement that set it, gives {@code reserved} at that
 * moment (were it wrong, the check of {@code reserved} against the unpaid orders would show it), and the units sold so
 * far (items of PAID orders) are read from the database before the call and after its answer: from then on the SKU
 * must hold {@code available + reserved + sold} in all.
 * Sales only ever grow, so the two readings agree exactly when no payment of that SKU committed during the call;
 * when they differ the moment of the set is unknown and the SKU is marked untrackable, which fails the check
 * instead of guessing. Emptied with the database ({@link TestDatabase#reset()}).
 */
public final class StockLedger {
  private static final Pattern INVENTORY_PATH = Pattern.compile("^/v1/admin/inventory/([^/?]+)$");
  /** The units put in per SKU; -1 for a SKU whose stock was set while payments of it committed (or unreadably). */
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

  /** A stock write on its way: the SKU, the {@code available} asked for (null if unreadable), the units sold before it was sent. */
  record Write(String sku, Long available, long soldBefore) {}

  /** Called before {@code request} is sent: a write when it sets a SKU's stock, else null. */
  static Write before(HttpRequest request) {
    if (!request.method().equals("PUT")) {
      return null;
    }
    Matcher path = INVENTORY_PATH.matcher(request.uri().getPath());
    return path.matches() ? new Write(path.group(1), requestedAvailable(request), sold(path.group(1))) : null;
  }

  private static Long requestedAvailable(HttpRequest request) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    CompletableFuture<Void> read = new CompletableFuture<>();
    request.bodyPublisher().ifPresentOrElse(publisher -> publisher.subscribe(new Flow.Subscriber<ByteBuffer>() {
      @Override
      public void onSubscribe(Flow.Subscription subscription) {
        subscription.request(Long.MAX_VALUE);
      }

      @Override
      public void onNext(ByteBuffer bytes) {
        byte[] chunk = new byte[bytes.remaining()];
        bytes.get(chunk);
        body.writeBytes(chunk);
      }

      @Override
      public void onError(Throwable failure) {
        read.completeExceptionally(failure);
      }

      @Override
      public void onComplete() {
        read.complete(null);
      }
    }), () -> read.complete(null));
    try {
      read.get(5, TimeUnit.SECONDS);
      Object available = new JsonObject(body.toString(StandardCharsets.UTF_8)).getValue("available");
      return available instanceof Number number ? number.longValue() : null;
    } catch (Exception unreadable) { // not JSON, or no such field: the service refuses it, nothing to record
      return null;
    }
  }

  /** Called with the answer to a write: a 200 sets the SKU's reference. */
  static void after(Write write, int status, String body) {
    if (write == null || status != 200) {
      return;
    }
    long soldAfter = sold(write.sku());
    PUT_IN.put(write.sku(), soldAfter == write.soldBefore() && write.available() != null
        ? write.available() + new JsonObject(body).getLong("reserved") + soldAfter
        : UNTRACKABLE);
  }

  /** Units of {@code sku} in PAID orders. */
  static long sold(String sku) {
    return KeptConnection.count("""
        SELECT coalesce(sum(i.qty), 0) FROM order_items i JOIN orders o ON o.id = i.order_id
        WHERE i.sku = ? AND o.status = 'PAID'""", sku);
  }
}
