package ordertimeout.support;

import io.vertx.core.json.JsonObject;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpRequest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
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
 * and {@code POST /v1/admin/inventory/{sku}/adjust} that goes through {@link Api} (setStock, adjustStock or a raw
 * request), and {@link #putIn} for stock a test writes with SQL.
 *
 * <p>The admin set changes {@code available} only: to the number in the request, which is what the record takes (not
 * what the service answers it set). The answer, read in the statement that set it, gives {@code reserved} at that
 * moment (were it wrong, the check of {@code reserved} against the unpaid orders would show it), and the units sold so
 * far (items of PAID orders) are read from the database before the call and after its answer: from then on the SKU
 * must hold {@code available + reserved + sold} in all.
 * Sales only ever grow, so the two readings agree exactly when no payment of that SKU committed during the call;
 * when they differ the moment of the set is unknown and the SKU is marked untrackable, which fails the check
 * instead of guessing. An adjust answered 200 puts in its {@code delta} (negative: takes out), once per
 * idempotency key: a retry with the key is answered 200 too but changes nothing. Emptied with the database
 * ({@link TestDatabase#reset()}).
 */
public final class StockLedger {
  private static final Pattern INVENTORY_PATH = Pattern.compile("^/v1/admin/inventory/([^/?]+)$");
  private static final Pattern ADJUST_PATH = Pattern.compile("^/v1/admin/inventory/([^/?]+)/adjust$");
  /** The units put in per SKU; -1 for a SKU whose stock was set while payments of it committed (or unreadably). */
  private static final Map<String, Long> PUT_IN = new ConcurrentHashMap<>();
  /** The idempotency keys of the adjusts counted so far. */
  private static final Set<String> ADJUST_KEYS = ConcurrentHashMap.newKeySet();
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
    ADJUST_KEYS.clear();
  }

  /** A stock write on its way, recorded when its answer comes. */
  interface Write {
    void answered(int status, String body);
  }

  /** A set: the SKU, the {@code available} asked for (null if unreadable), the units sold before it was sent. */
  private record SetWrite(String sku, Long available, long soldBefore) implements Write {
    /** A 200 sets the SKU's reference. */
    @Override
    public void answered(int status, String body) {
      if (status != 200) {
        return;
      }
      long soldAfter = sold(sku);
      PUT_IN.put(sku, soldAfter == soldBefore && available != null
          ? available + new JsonObject(body).getLong("reserved") + soldAfter
          : UNTRACKABLE);
    }
  }

  /** An adjust: the SKU, the {@code delta} asked for (null if unreadable), its Idempotency-Key. */
  private record AdjustWrite(String sku, Long delta, String key) implements Write {
    @Override
    public void answered(int status, String body) {
      if (status == 200 && ADJUST_KEYS.add(key)) {
        putIn(sku, delta);
      }
    }
  }

  /** Called before {@code request} is sent: a write when it sets or adjusts a SKU's stock, else null. */
  static Write before(HttpRequest request) {
    String path = request.uri().getPath();
    Matcher set = INVENTORY_PATH.matcher(path);
    if (request.method().equals("PUT") && set.matches()) {
      return new SetWrite(set.group(1), requested(request, "available"), sold(set.group(1)));
    }
    Matcher adjust = ADJUST_PATH.matcher(path);
    if (request.method().equals("POST") && adjust.matches()) {
      return new AdjustWrite(adjust.group(1), requested(request, "delta"), request.headers().firstValue("Idempotency-Key").orElse(null));
    }
    return null;
  }

  /** The whole number {@code field} of the request's JSON body; null when there is none. */
  private static Long requested(HttpRequest request, String field) {
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
      Object value = new JsonObject(body.toString(StandardCharsets.UTF_8)).getValue(field);
      return value instanceof Number number ? number.longValue() : null;
    } catch (Exception unreadable) { // not JSON, or no such field: the service refuses it, nothing to record
      return null;
    }
  }

  /** Called with the answer to a write (null: the request wrote no stock). */
  static void after(Write write, int status, String body) {
    if (write != null) {
      write.answered(status, body);
    }
  }

  /** Units of {@code sku} in PAID orders. */
  static long sold(String sku) {
    return KeptConnection.count("""
        SELECT coalesce(sum(i.qty), 0) FROM order_items i JOIN orders o ON o.id = i.order_id
        WHERE i.sku = ? AND o.status = 'PAID'""", sku);
  }
}
