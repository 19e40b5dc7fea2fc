package ordertimeout.close;

import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/** Pay requests sent right at the deadline race the wheel's close: exactly one wins, every time. */
class PayCloseRaceTest extends ServiceTestBase {
  private static final int ORDERS = 150;

  @Test
  void payAndTimeoutCloseRacingAtTheDeadlineHaveExactlyOneWinner() throws Exception {
    api.setStock("RACE", ORDERS * 2L);
    List<String> ids = new ArrayList<>();
    Instant closeAt = null;
    for (int i = 0; i < ORDERS; i++) {
      var order = create("racer-" + i, 2, "RACE", 2);
      ids.add(order.getString("id"));
      closeAt = Instant.parse(order.getString("closeAt"));
    }
    // Aim each pay at its order's deadline, a few milliseconds either side.
    List<CompletableFuture<Api.Response>> pays = new ArrayList<>();
    for (String id : ids) {
      Instant deadline = Instant.parse(api.order(id).json().getString("closeAt"));
      long waitMillis = Duration.between(Instant.now(), deadline).toMillis() - 3;
      if (waitMillis > 0) {
        Thread.sleep(Math.min(waitMillis, 50));
      }
      pays.add(api.postAsync("/v1/orders/" + id + "/pay", Api.USER_KEY));
    }
    Await.until("every order settled", Duration.ofSeconds(10),
        () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);

    int paid = 0;
    int closed = 0;
    for (int i = 0; i < ORDERS; i++) {
      Api.Response pay = pays.get(i).join();
      String status = statusOf(ids.get(i));
      if (pay.status() == 200) {
        assertThat(status).isEqualTo("PAID");
        paid++;
      } else {
        assertThat(pay.code()).as(pay.body()).isEqualTo("order_closed");
        assertThat(status).isEqualTo("CLOSED");
        closed++;
      }
    }
    assertThat(paid + closed).isEqualTo(ORDERS);
    var stock = api.stock("RACE");
    assertThat(stock.getLong("reserved")).isZero();
    assertThat(stock.getLong("available")).as("closed orders gave back, paid ones sold").isEqualTo(closed * 2L);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event IN ('PAID', 'CLOSED')")).isEqualTo(ORDERS);
    System.out.printf("pay-vs-close race: %d paid, %d closed of %d%n", paid, closed, ORDERS);
  }
}
