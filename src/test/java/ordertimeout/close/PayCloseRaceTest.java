package ordertimeout.close;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Pay requests that reach the database right at the deadline race the wheel's close: both outcomes happen, many
 * times, and each time exactly one wins, with the stock, log and events of that one outcome only.
 */
class PayCloseRaceTest extends ServiceTestBase {
  private static final int ORDERS = 200;
  /** Long enough to create every order before the first deadline, on a loaded machine too. */
  private static final int TIMEOUT_SECONDS = 8;
  /** Each pay is aimed at its order's deadline, moved by one of ORDERS steps spread evenly over this much either side. */
  private static final Duration SPREAD = Duration.ofMillis(5);
  /** How far the aim moves after each pay, towards the outcome that pay did not have. */
  private static final Duration AIM_STEP = Duration.ofMillis(1);
  /** Pays of orders far from their deadline, to learn how long a pay takes to reach the database's clock. */
  private static final int PROBES = 20;
  /** How often each outcome must have happened for the race to count as shown. */
  private static final int AT_LEAST = ORDERS / 10;

  /** One order of the race and its pay, aimed at {@code closeAt + offset} on the database's clock. */
  private record Race(String id, Instant closeAt, Duration offset) {}

  /** A pay as sent: when, and its answer. */
  private record Sent(Instant at, CompletableFuture<Api.Response> answer) {}

  @Test
  void paysArrivingAtTheDeadlineMeetTheTimeoutCloseAndExactlyOneWinsEachTime() throws Exception {
    // A SKU per order: each race is between a pay and a close of one order, not a queue on one hot inventory row.
    for (int i = 0; i < ORDERS; i++) {
      api.setStock("RACE-" + i, 2);
    }
    api.setStock("PROBE", PROBES);
    Duration probedLatency = payLatency();
    long wheelClosesBefore = api.stats().getJsonObject("timeoutClosesByPath").getLong("wheel");

    // One after another: the deadlines come a create's time apart, so that the pays, each at its deadline, rarely overlap.
    long createStarted = System.nanoTime();
    List<Race> races = new ArrayList<>();
    for (int i = 0; i < ORDERS; i++) {
      JsonObject order = create("racer-" + i, TIMEOUT_SECONDS, "RACE-" + i, 2);
      races.add(new Race(order.getString("id"), Instant.parse(order.getString("closeAt")), offset(i)));
    }
    Duration creating = Duration.ofNanos(System.nanoTime() - createStarted);
    races.sort(Comparator.comparing(race -> race.closeAt().plus(race.offset())));
    assertThat(Duration.between(Instant.now(), races.get(0).closeAt()))
        .as("time left before the first deadline after creating %d orders in %s", ORDERS, creating)
        .isGreaterThan(Duration.ofMillis(500));

    // Each pay is sent so as to reach the database's clock at its order's deadline plus its offset. How long a pay
    // takes to get there changes with the load: the aim follows it, a step earlier after each pay that lost, a step
    // later after each that won, so that the pays keep arriving at the deadline whatever the machine is doing.
    AtomicLong leadNanos = new AtomicLong(probedLatency.toNanos());
    Map<Race, Sent> pays = new HashMap<>();
    for (Race race : races) {
      Instant aim = race.closeAt().plus(race.offset()).minusNanos(leadNanos.get());
      long waitNanos = Duration.between(Instant.now(), aim).toNanos();
      if (waitNanos > 0) {
        LockSupport.parkNanos(waitNanos);
      }
      Instant sentAt = Instant.now();
      CompletableFuture<Api.Response> answer = api.postAsync("/v1/orders/" + race.id() + "/pay", Api.USER_KEY);
      answer.thenAccept(response -> leadNanos.addAndGet(response.status() == 200 ? -AIM_STEP.toNanos() : AIM_STEP.toNanos()));
      pays.put(race, new Sent(sentAt, answer));
    }
    Await.until("every order of the race settled", Duration.ofSeconds(10),
        () -> Sql.count("SELECT count(*) FROM orders WHERE user_id LIKE 'racer-%' AND status = 'UNPAID'") == 0);

    int payWon = 0;
    int closeWon = 0;
    List<Duration> winningMargins = new ArrayList<>();
    List<Duration> losingSent = new ArrayList<>();
    Map<String, Map<String, Object>> rows = new HashMap<>();
    Sql.rows("SELECT id::text AS id, status, close_reason, close_at, paid_at, closed_at FROM orders WHERE user_id LIKE 'racer-%'")
        .forEach(row -> rows.put((String) row.get("id"), row));
    for (Race race : races) {
      Sent sent = pays.get(race);
      Api.Response pay = sent.answer().get(40, TimeUnit.SECONDS);
      Map<String, Object> row = rows.get(race.id());
      Instant closeAt = ((Timestamp) row.get("close_at")).toInstant();
      assertThat(closeAt).as("the deadline the order was created with").isEqualTo(race.closeAt());
      if (pay.status() == 200) {
        assertThat(row.get("status")).as("order %s, whose pay was answered 200", race.id()).isEqualTo("PAID");
        Instant paidAt = ((Timestamp) row.get("paid_at")).toInstant();
        assertThat(paidAt).as("order %s paid before its deadline", race.id()).isBefore(closeAt);
        assertThat(Instant.parse(pay.json().getString("paidAt"))).isEqualTo(paidAt);
        winningMargins.add(Duration.between(paidAt, closeAt));
        payWon++;
      } else {
        assertThat(pay.status()).as("order %s: %s", race.id(), pay.body()).isEqualTo(409);
        assertThat(pay.code()).as(pay.body()).isEqualTo("order_closed");
        assertThat(row.get("status")).as("order %s, whose pay was refused", race.id()).isEqualTo("CLOSED");
        assertThat(row.get("close_reason")).isEqualTo("TIMEOUT");
        assertThat(((Timestamp) row.get("closed_at")).toInstant()).as("never early").isAfterOrEqualTo(closeAt);
        losingSent.add(Duration.between(closeAt, sent.at()));
        closeWon++;
      }
    }
    long wheelCloses = api.stats().getJsonObject("timeoutClosesByPath").getLong("wheel") - wheelClosesBefore;
    winningMargins.sort(Duration::compareTo);
    losingSent.sort(Duration::compareTo);
    System.out.printf("pay-vs-close race: %d paid, %d closed (%d by the wheel, the rest by the late pay itself) of %d, created in %d ms; "
            + "pays took %d us to the database's clock when probed, %d us at the end; winning pays reached it %s us before "
            + "the deadline (median %s); losing pays were sent %s us from the deadline%n",
        payWon, closeWon, wheelCloses, ORDERS, creating.toMillis(), probedLatency.toNanos() / 1000, leadNanos.get() / 1000,
        range(winningMargins), median(winningMargins), range(losingSent));

    assertThat(payWon).as("pays that won the race at the deadline").isGreaterThanOrEqualTo(AT_LEAST);
    assertThat(closeWon).as("timeout closes that won the race at the deadline").isGreaterThanOrEqualTo(AT_LEAST);

    // Each order ended once: one final log line and one final event, of its outcome; stock sold or given back.
    assertThat(Sql.count("SELECT count(*) FROM order_log l JOIN orders o ON o.id = l.order_id "
        + "WHERE o.user_id LIKE 'racer-%' AND l.event IN ('PAID', 'CLOSED')")).isEqualTo(ORDERS);
    assertThat(Sql.count("SELECT count(*) FROM outbox e JOIN orders o ON o.id = e.order_id "
        + "WHERE o.user_id LIKE 'racer-%' AND e.type = 'ORDER_PAID'")).isEqualTo(payWon);
    assertThat(Sql.count("SELECT count(*) FROM outbox e JOIN orders o ON o.id = e.order_id "
        + "WHERE o.user_id LIKE 'racer-%' AND e.type = 'ORDER_CLOSED'")).isEqualTo(closeWon);
    assertThat(Sql.count("SELECT sum(reserved) FROM inventory WHERE sku LIKE 'RACE-%'")).isZero();
    assertThat(Sql.count("SELECT sum(available) FROM inventory WHERE sku LIKE 'RACE-%'"))
        .as("closed orders gave back, paid ones sold").isEqualTo(closeWon * 2L);
  }

  private static String range(List<Duration> sorted) {
    return sorted.isEmpty() ? "-" : sorted.get(0).toNanos() / 1000 + ".." + sorted.get(sorted.size() - 1).toNanos() / 1000;
  }

  private static String median(List<Duration> sorted) {
    return sorted.isEmpty() ? "-" : Long.toString(sorted.get(sorted.size() / 2).toNanos() / 1000);
  }

  /**
   * The i-th race's offset from its deadline: ORDERS evenly spaced steps over [-SPREAD, +SPREAD], visited in a
   * scattered order (a step coprime with ORDERS), so that neither outcome bunches at one end of the creation.
   */
  private static Duration offset(int i) {
    long step = (i * 37L) % ORDERS;
    long spreadNanos = SPREAD.toNanos();
    return Duration.ofNanos(-spreadNanos + 2 * spreadNanos * step / (ORDERS - 1));
  }

  /**
   * The median time from sending a pay to its transaction's clock ({@code paidAt} is the database's {@code now()}
   * there, the moment the deadline is compared with), over pays of orders far from their deadline, the first few
   * left out as warm-up. The test and the database read the same machine's clock.
   */
  private Duration payLatency() {
    List<Duration> latencies = new ArrayList<>();
    for (int i = 0; i < PROBES; i++) {
      String id = create("prober", 600, "PROBE", 1).getString("id");
      Instant sent = Instant.now();
      Api.Response paid = api.pay(id);
      assertThat(paid.status()).as(paid.body()).isEqualTo(200);
      if (i >= PROBES / 4) {
        latencies.add(Duration.between(sent, Instant.parse(paid.json().getString("paidAt"))));
      }
    }
    latencies.sort(Duration::compareTo);
    return max(Duration.ZERO, latencies.get(latencies.size() / 2));
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }
}
