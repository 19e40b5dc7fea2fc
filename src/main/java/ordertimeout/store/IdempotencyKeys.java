package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderRejected.Reason;

/**
 * The Idempotency-Key of a request that comes alone (a stock adjust, a bulk action; creates come in groups,
 * {@link OrderCreates}), inside the transaction that does the request's work. The key's lock and row are the creates':
 * a key is one request's, whichever route it came to first.
 */
final class IdempotencyKeys {
  private IdempotencyKeys() {}

  /**
   * Locks the key until the transaction ends and answers what is stored with it, null if nothing is:
   * {@link Reason#REQUEST_IN_PROGRESS} while another transaction holds it, {@link Reason#IDEMPOTENCY_KEY_REUSED} when
   * it was stored for another request.
   */
  static Future<String> lockAndFind(SqlConnection conn, IdempotencyKey key) {
    return conn.preparedQuery(Sql.TRY_LOCK_IDEMPOTENCY_KEYS)
        .execute(Tuple.of(new Long[] {OrderCreates.lockKey("idempotency", key.client(), key.key())}))
        .compose(locked -> {
          if (!locked.iterator().next().getBoolean("locked")) {
            throw new OrderRejected(Reason.REQUEST_IN_PROGRESS, "a request with this Idempotency-Key is still running");
          }
          return conn.preparedQuery(Sql.SELECT_IDEMPOTENCY_KEYS).execute(Tuple.tuple()
              .addArrayOfString(new String[] {key.client()}).addArrayOfString(new String[] {key.key()}));
        })
        .map(stored -> stored.size() == 1 ? answer(stored, key) : null);
  }

  private static String answer(RowSet<Row> stored, IdempotencyKey key) {
    Row row = stored.iterator().next();
    if (!row.getString("request_hash").equals(key.requestHash())) {
      throw new OrderRejected(Reason.IDEMPOTENCY_KEY_REUSED, "this Idempotency-Key was used for a different request");
    }
    return row.getString("response_body");
  }

  /** Stores the key with the request's answer, committed with the request's work. */
  static Future<Void> store(SqlConnection conn, IdempotencyKey key, int status, String body) {
    return conn.preparedQuery(Sql.INSERT_IDEMPOTENCY_KEYS)
        .execute(Tuple.tuple().addArrayOfString(new String[] {key.client()})
            .addArrayOfString(new String[] {key.key()}).addArrayOfString(new String[] {key.requestHash()})
            .addArrayOfInteger(new Integer[] {status}).addArrayOfString(new String[] {body})
            .addArrayOfLong(new Long[] {null}))
        .mapEmpty();
  }
}
