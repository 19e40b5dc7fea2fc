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
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Pay requests that reach the database right at the deadline race the wheel's close: both outcomes happen, many
 * times, and each time exactly one wins, with the stock, log and events of that one outcome only.
 */
class PayCloseRaceTest extends ServiceTestBase {
  private static final int ORDERS = 120;
  /**
   * The orders are created at least this far apart, so that their deadlines and pays are. A pay that loses costs the
   * service more than one that wins (its group's transaction, then one or two of its own), so pays that come faster
   * than a slowed service answers them fall further behind with every loss, and lose on: fresh clones of the suite
   * failed so with pays about 10 ms apart (2026-12-03: 0-1 of 200 won, answers rising to a second).
   */
  private static final Duration DEADLINE_GAP = Duration.ofMillis(40);
  /** Long enough to create every order before the first deadline (ORDERS x DEADLINE_GAP and more), on a loaded machine too. */
  private static final int TIMEOUT_SECONDS = 15;
  /** Each pay is aimed at its order's deadline, moved by one of ORDERS steps spread evenly over this much either side. */
  private static final Duration SPREAD = Duration.ofMillis(5);
  /** How far the aim moves after each pay, towards the outcome that pay did not have. */
  private static final Duration AIM_STEP = Duration.ofMillis(1);
  /** Pays of orders far from their deadline, to learn how long a pay takes to reach the database's clock. */
  private static final int PROBES = 20;
  /**
   * A probe is sent again among the race's pays after every this many: a loaded machine can add hundreds of
   * milliseconds to every pay at once, which steps of a millisecond alone would not catch up with within the race.
   */
  private static final int PROBE_EVERY = 10;
  /** How often each outcome must have happened for the race to count as shown. */
  private static final int AT_LEAST = ORDERS / 10;

  /** One order of the race and its pay, aimed at {@code closeAt + offset} on the database's clock. */
  private record Race(String id, Instant closeAt, Duration offset) {}

  /** A pay as sent: when, and its answer; answeredIn completes with the time from sending to the answer. */
  private record Sent(Instant at, CompletableFuture<Api.Response> answer, CompletableFuture<Duration> answeredIn) {}

  @Test
  void paysArrivingAtTheDeadlineMeetTheTimeoutCloseAndExactlyOneWinsEachTime() throws Exception {
    // A SKU per order: each race is between a pay and a close of one order, not a queue on one hot inventory row.
    for (int i = 0; i < ORDERS; i++) {
      api.setStock("RACE-" + i, 2);
    }
    api.setStock("PROBE", PROBES + ORDERS / PROBE_EVERY);
    Duration probedLatency = payLatency();
    List<String> racingProbes = new ArrayList<>();
    for (int i = 0; i < ORDERS / PROBE_EVERY; i++) {
      racingProbes.add(create("prober", 600, "PROBE", 1).getString("id"));
    }
    long wheelClosesBefore = api.stats().getJsonObject("timeoutClosesByPath").getLong("wheel");

    // One after another, DEADLINE_GAP apart at least, so that the pays, each at its deadline, rarely overlap.
    long createStarted = System.nanoTime();
    long nextCreate = createStarted;
    List<Race> races = new ArrayList<>();
    for (int i = 0; i < ORDERS; i++) {
      for (long wait = nextCreate - System.nanoTime(); wait > 0; wait = nextCreate - System.nanoTime()) {
        LockSupport.parkNanos(wait);
      }
      nextCreate = System.nanoTime() + DEADLINE_GAP.toNanos();
      JsonObject order = create("racer-" + i, TIMEOUT_SECONDS, "RACE-" + i, 2);
      races.add(new Race(order.getString("id"), Instant.parse(order.getString("closeAt")), offset(i)));
    }
    Duration creating = Duration.ofNanos(System.nanoTime() - createStarted);
    races.sort(Comparator.comparing(race -> race.closeAt().plus(race.offset())));
    assertThat(Duration.between(Instant.now(), races.get(0).closeAt()))
        .as("time left before the first deadline after creating %d orders in %s", ORDERS, creating)
        .isGreaterThan(Duration.ofMillis(500));

    // Each pay is sent so as to reach the database's clock at its order's deadline plus its offset. How long a pay
    // takes to get there changes with the load: the aim follows it, measured again by a probe among every few pays,
    // and corrected a step earlier after each pay that lost, a step later after each that won, so that the pays keep
    // arriving at the deadline whatever the machine is doing.
    Aim aim = new Aim(probedLatency);
    Map<Race, Sent> pays = new HashMap<>();
    for (int i = 0; i < races.size(); i++) {
      Race race = races.get(i);
      Instant sendAt = race.closeAt().plus(race.offset()).minus(aim.lead());
      long waitNanos = Duration.between(Instant.now(), sendAt).toNanos();
      if (waitNanos > 0) {
        LockSupport.parkNanos(waitNanos);
      }
      Instant sentAt = Instant.now();
      CompletableFuture<Api.Response> answer = api.postAsync("/v1/orders/" + race.id() + "/pay", Api.USER_KEY);
      CompletableFuture<Duration> answeredIn = answer.thenApply(response -> {
        aim.follow(response.status() == 200);
        return Duration.between(sentAt, Instant.now());
      });
      pays.put(race, new Sent(sentAt, answer, answeredIn));
      if (i % PROBE_EVERY == PROBE_EVERY - 1) {
        Instant probeSentAt = Instant.now();
        api.postAsync("/v1/orders/" + racingProbes.get(i / PROBE_EVERY) + "/pay", Api.USER_KEY).thenAccept(probe -> {
          if (probe.status() == 200) {
            aim.measured(latency(probeSentAt, probe));
          }
        });
      }
    }
    Await.until("every order of the race settled", Duration.ofSeconds(10),
        () -> Sql.count("SELECT count(*) FROM orders WHERE user_id LIKE 'racer-%' AND status = 'UNPAID'") == 0);

    int payWon = 0;
    int closeWon = 0;
    List<Duration> winningMargins = new ArrayList<>();
    List<Duration> losingSent = new ArrayList<>();
    List<Duration> wonIn = new ArrayList<>();
    List<Duration> lostIn = new ArrayList<>();
    Map<String, Map<String, Object>> rows = new HashMap<>();
    Sql.rows("SELECT id::text AS id, status, close_reason, close_at, paid_at, closed_at FROM orders WHERE user_id LIKE 'racer-%'")
        .forEach(row -> rows.put((String) row.get("id"), row));
    for (Race race : races) {
      Sent sent = pays.get(race);
      Api.Response pay = sent.answer().get(40, TimeUnit.SECONDS);
      (pay.status() == 200 ? wonIn : lostIn).add(sent.answeredIn().get(40, TimeUnit.SECONDS));
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
    wonIn.sort(Duration::compareTo);
    lostIn.sort(Duration::compareTo);
    String race = String.format("pay-vs-close race: %d paid, %d closed (%d by the wheel, the rest by the late pay itself) of %d, "
            + "created in %d ms; pays took %d us to the database's clock when probed, %d us at the end (largest %d us); "
            + "winning pays reached it %s us before the deadline (median %s); losing pays were sent %s us from the deadline; "
            + "answered in %s us when won (median %s), %s us when lost (median %s)",
        payWon, closeWon, wheelCloses, ORDERS, creating.toMillis(), probedLatency.toNanos() / 1000, aim.lead().toNanos() / 1000,
        aim.largestLead().toNanos() / 1000, range(winningMargins), median(winningMargins), range(losingSent),
        range(wonIn), median(wonIn), range(lostIn), median(lostIn));
    System.out.println(race);

    assertThat(payWon).as("pays that won the race at the deadline; %s", race).isGreaterThanOrEqualTo(AT_LEAST);
    assertThat(closeWon).as("timeout closes that won the race at the deadline; %s", race).isGreaterThanOrEqualTo(AT_LEAST);

    // Each order ended once: one final log line and one final event, of its outcome; stock sold or given back.
    assertThat(Sql.count("SELECT count(*) FROM order_log l JOIN orders o ON o.id = l.order_id "
        + "WHERE o.user_id LIKE 'racer-%' AND l.event IN ('PAID', 'CLOSED')")).isEqualTo(ORDERS);
    assertThat(Sql.count("SELECT count(*) FROM outbox e JOIN orders o ON o.id = e.order_id "
        + "WHERE o.user_id LIKE 'racer-%' AND e.type = 'ORDER_PAID'")).isEqualTo(payWon);
    assertThat(Sql.count("SELECT count(*) FROM outbox e JOIN orders o ON o.id = e.order_id "
        + "WHERE o.user_id LIKE 'racer-%' AND e.type = 'ORDER_CLOSED'")).isEqualTo(closeWon);
    assertThat(Sql.count("SELECT sum(reserved) FROM stock WHERE sku LIKE 'RACE-%'")).isZero();
    assertThat(Sql.count("SELECT sum(available) FROM stock WHERE sku LIKE 'RACE-%'"))
        .as("closed orders gave back, paid ones sold").isEqualTo(closeWon * 2L);
  }

  /**
   * How long before its aim a pay is sent: the median of the last three probes' times to the database's clock (one
   * slow probe is an outlier, a rise that lasts is not), made shorter by a step after each pay that won and longer
   * after each that lost. Answers come on the HTTP client's threads.
   */
  private static final class Aim {
    private final Deque<Duration> lastProbes = new ArrayDeque<>();
    private Duration measured;
    private Duration correction = Duration.ZERO;
    private Duration largestLead;

    Aim(Duration probed) {
      this.measured = probed;
      this.largestLead = probed;
      lastProbes.add(probed);
    }

    synchronized Duration lead() {
      return measured.plus(correction);
    }

    synchronized Duration largestLead() {
      return largestLead;
    }

    synchronized void measured(Duration probed) {
      lastProbes.addLast(probed);
      if (lastProbes.size() > 3) {
        lastProbes.removeFirst();
      }
      List<Duration> sorted = lastProbes.stream().sorted().toList();
      measured = sorted.get(sorted.size() / 2);
      largestLead = max(largestLead, lead());
    }

    synchronized void follow(boolean won) {
      correction = won ? correction.minus(AIM_STEP) : correction.plus(AIM_STEP);
      largestLead = max(largestLead, lead());
    }
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
      if (i >= PROBES / 4) {
        latencies.add(latency(sent, paid));
      }
    }
    latencies.sort(Duration::compareTo);
    return latencies.get(latencies.size() / 2);
  }

  /** From sending a pay to its transaction's clock ({@code paidAt}); the pay must have been answered 200. */
  private static Duration latency(Instant sent, Api.Response paid) {
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    return max(Duration.ZERO, Duration.between(sent, Instant.parse(paid.json().getString("paidAt"))));
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }
}
