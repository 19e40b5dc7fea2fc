package ordertimeout;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A pay or a payment-started that reaches an order just past its deadline while another transaction moves the deadline
 * later (an extend, a bulk extend) is decided by what that transaction committed: the pay's first statement does not
 * see the move and takes nothing, so the order is decided again with its row held. It was answered 200 with the order
 * still unpaid: the close it tried instead found the order no longer due.
 */
class PayAcrossADeadlineMoveTest extends ServiceTestBase {
  private static final Duration WAIT = Duration.ofSeconds(20);

  @Override
  protected Map<String, String> overrides() {
    // Nothing but the request under test touches the order, and a single pay waits for its row instead of running out
    // of its lock wait and trying again (a try after the commit would pay without deciding under the lock).
    return Map.of("OT_SWEEP_GRACE_SECONDS", "600", "OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "30000");
  }

  @Test
  void aPayThatMissesADeadlineMoveInFlightPaysOnceItCommitted() throws Exception {
    Api.Response paid = acrossADeadlineMove(id -> api.pay(id));
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    assertThat(paid.json().getString("status")).isEqualTo("PAID");
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID'")).isEqualTo(1);
  }

  @Test
  void aPaymentStartedThatMissesADeadlineMoveInFlightHoldsOnceItCommitted() throws Exception {
    Api.Response held = acrossADeadlineMove(id -> api.paymentStarted(id));
    assertThat(held.status()).as(held.body()).isEqualTo(200);
    assertThat(held.json().getString("holdUntil")).as(held.body()).isNotNull();
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND hold_until > close_at")).isEqualTo(1);
  }

  /**
   * Sends {@code request} for an order a second past its deadline while a transaction holds its row, having moved the
   * deadline ten minutes on; commits that move once the request waits for the row, and answers the request's answer.
   */
  private Api.Response acrossADeadlineMove(Function<String, Api.Response> request) throws Exception {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 600, "SKU-1", 1).getString("id");
    Sql.execute("UPDATE orders SET close_at = now() - interval '1 second' WHERE id = ?", Long.parseLong(id));
    try (Connection move = TestDatabase.jdbc()) {
      move.setAutoCommit(false);
      Sql.rows(move, "UPDATE orders SET close_at = now() + interval '600 seconds' WHERE id = ? RETURNING id",
          Long.parseLong(id));
      long movePid = ((Number) Sql.rows(move, "SELECT pg_backend_pid() AS pid").get(0).get("pid")).longValue();
      CompletableFuture<Api.Response> answer = CompletableFuture.supplyAsync(() -> request.apply(id));
      Await.until("the request waiting for the order's row", WAIT, () -> answer.isDone() || Sql.count(
          "SELECT count(*) FROM pg_stat_activity WHERE ?::int = ANY(pg_blocking_pids(pid))", movePid) > 0);
      move.commit();
      return answer.get();
    }
  }
}
