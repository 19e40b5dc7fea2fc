package ordertimeout.close;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.metrics.Alarms;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Metrics;
import ordertimeout.support.Prometheus;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An order whose close the database keeps refusing (a trigger raises for that one order id) is parked after
 * close.parkAfterFailures failed closes, counted in PostgreSQL; the sweep stops trying it, it is listed, counted and
 * alarmed; a retry while the cause lasts counts from zero again; a retry once the cause is gone closes it once, with
 * its stock given back once (the invariants checked after the test).
 */
class ParkedOrderTest extends ServiceTestBase {
  private static final int PARK_AFTER = 3;
  private static final Duration WAIT = Duration.ofSeconds(25);

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_CLOSE_PARK_AFTER_FAILURES", Integer.toString(PARK_AFTER),
        "OT_METRICS_OUTBOX_REFRESH_SECONDS", "1",
        "OT_ALARMS_EVALUATE_SECONDS", "1");
  }

  @AfterEach
  void dropInjectedFailure() {
    Sql.executeDdl("DROP TRIGGER IF EXISTS refuse_close ON orders");
    Sql.execute("DROP FUNCTION IF EXISTS refuse_close()");
  }

  /** From now on the database refuses to close order {@code id} (and only it). */
  private static void refuseTheCloseOf(long id) {
    Sql.execute("""
        CREATE FUNCTION refuse_close() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.id = %d AND NEW.status = 'CLOSED' THEN
            RAISE EXCEPTION 'injected failure closing order %%', NEW.id;
          END IF;
          RETURN NEW;
        END $$""".formatted(id));
    Sql.executeDdl("CREATE TRIGGER refuse_close BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION refuse_close()");
  }

  private static long failures(long id) {
    return Sql.count("SELECT coalesce(max(failures), 0) FROM close_failures WHERE order_id = ?", id);
  }

  private static boolean parked(long id) {
    return Sql.count("SELECT count(*) FROM close_failures WHERE order_id = ? AND parked_at IS NOT NULL", id) == 1;
  }

  private Prometheus scrape() {
    return new Prometheus(api.get("/metrics", null).body());
  }

  @Test
  void aCloseThatKeepsFailingIsParkedListedAlarmedAndClosedOnceByARetry() {
    api.setStock("FINE", 100);
    api.setStock("POISON", 100);
    long good = Long.parseLong(create("u-good", 600, "FINE", 1).getString("id"));
    long poisoned = Long.parseLong(create("u-poison", 600, "FINE", 1, "POISON", 2).getString("id"));
    refuseTheCloseOf(poisoned);
    long parkingsBefore = service.service().stats().parkings();
    Prometheus before = scrape();
    double sweepRunsBefore = Metrics.sum(before, "ordertimeout_sweep_runs_seconds_count");
    double sweepFoundBefore = Metrics.sum(before, "ordertimeout_sweep_found_total", "kind", "close");
    double sweepClosedBefore = Metrics.sum(before, "ordertimeout_sweep_catches_total");

    // Both fall due past the sweep's grace: the sweep closes the good one, and fails on the poisoned one pass after pass.
    Sql.execute("UPDATE orders SET close_at = now() - interval '5 seconds' WHERE id = ANY(?)", (Object) new Long[] {good, poisoned});
    Await.until("the poisoned order to be parked", WAIT, () -> parked(poisoned));

    assertThat(statusOf(Long.toString(good))).isEqualTo("CLOSED");
    assertThat(statusOf(Long.toString(poisoned))).as("a parked order stays unpaid").isEqualTo("UNPAID");
    assertThat(failures(poisoned)).as("failed closes counted in the database").isEqualTo(PARK_AFTER);
    assertThat(service.service().stats().parkings() - parkingsBefore).isEqualTo(1);
    // A pass's figures are recorded when it has gone over every shard, after the close that parked the order.
    Await.until("the parking pass recorded", WAIT, () -> Metrics.sum(scrape(), "ordertimeout_sweep_found_total", "kind", "close")
        - sweepFoundBefore >= 1 + PARK_AFTER);
    Prometheus after = scrape();
    assertThat(Metrics.sum(after, "ordertimeout_sweep_runs_seconds_count")).as("sweep runs").isGreaterThan(sweepRunsBefore);
    assertThat(Metrics.sum(after, "ordertimeout_sweep_runs_seconds_sum")).as("sweep duration").isGreaterThan(0);
    assertThat(Metrics.sum(after, "ordertimeout_sweep_found_total", "kind", "close") - sweepFoundBefore)
        .as("found: the good order once, the poisoned one on each failing pass").isGreaterThanOrEqualTo(1 + PARK_AFTER);
    assertThat(Metrics.sum(after, "ordertimeout_sweep_catches_total") - sweepClosedBefore).as("closed by the sweep").isEqualTo(1);
    assertThat(Metrics.sum(after, "ordertimeout_close_parkings_total")).isGreaterThanOrEqualTo(1);

    // Listed, counted by the gauge, alarmed.
    Api.Response list = api.get("/v1/admin/orders/parked", Api.ADMIN_KEY);
    assertThat(list.status()).as(list.body()).isEqualTo(200);
    JsonArray orders = list.json().getJsonArray("orders");
    assertThat(orders).hasSize(1);
    JsonObject listed = orders.getJsonObject(0);
    assertThat(listed.getString("id")).isEqualTo(Long.toString(poisoned));
    assertThat(listed.getInteger("failures")).isEqualTo(PARK_AFTER);
    assertThat(listed.getString("lastError")).contains("injected failure closing order " + poisoned);
    assertThat(list.json().getValue("next")).isNull();
    Await.until("the parked gauge to read 1", WAIT, () -> Metrics.value(api, "ordertimeout_orders_parked") == 1.0);
    Await.until("the PARKED_ORDERS alarm to fire", WAIT, () -> service.service().alarms().isFiring(Alarms.Code.PARKED_ORDERS));
    assertThat(Metrics.value(api, "ordertimeout_alarm{code=\"PARKED_ORDERS\"}")).isEqualTo(1.0);

    // Parked: the sweep passes on without trying it again.
    double runs = Metrics.sum(scrape(), "ordertimeout_sweep_runs_seconds_count");
    Await.until("two more sweep passes", WAIT, () -> Metrics.sum(scrape(), "ordertimeout_sweep_runs_seconds_count") >= runs + 2);
    assertThat(failures(poisoned)).as("not tried while parked").isEqualTo(PARK_AFTER);
    assertThat(statusOf(Long.toString(poisoned))).isEqualTo("UNPAID");

    // Past its deadline and parked, it can be neither paid, nor held for a payment, nor extended: each answers 409
    // order_past_deadline (not 200 with the order still unpaid) and changes nothing.
    String id = Long.toString(poisoned);
    String rowAndWrites = "SELECT o.status, o.close_at, o.hold_until, o.paid_at, "
        + "(SELECT count(*) FROM order_log l WHERE l.order_id = o.id) AS log_lines, "
        + "(SELECT count(*) FROM outbox e WHERE e.order_id = o.id) AS events FROM orders o WHERE o.id = ?";
    Map<String, Object> unchanged = Sql.rows(rowAndWrites, poisoned).get(0);
    for (Api.Response refused : List.of(api.pay(id), api.paymentStarted(id),
        api.extend(id, new JsonObject().put("extendSeconds", 600)))) {
      assertThat(refused.status()).as(refused.body()).isEqualTo(409);
      assertThat(refused.code()).isEqualTo("order_past_deadline");
    }
    assertThat(Sql.rows(rowAndWrites, poisoned).get(0)).as("the order, its log and its events").isEqualTo(unchanged);

    // A retry while the cause lasts: still unpaid, counted from zero again, and parked again after as many failures.
    Api.Response stillFailing = api.post("/v1/admin/orders/" + poisoned + "/retry", Api.ADMIN_KEY);
    assertThat(stillFailing.status()).as(stillFailing.body()).isEqualTo(200);
    assertThat(stillFailing.json().getString("status")).isEqualTo("UNPAID");
    assertThat(parked(poisoned)).as("unparked by the retry").isFalse();
    Await.until("the poisoned order to be parked again", WAIT, () -> parked(poisoned));
    assertThat(failures(poisoned)).isEqualTo(PARK_AFTER);

    // The cause removed, a retry closes it, once.
    dropInjectedFailure();
    Api.Response retried = api.post("/v1/admin/orders/" + poisoned + "/retry", Api.ADMIN_KEY);
    assertThat(retried.status()).as(retried.body()).isEqualTo(200);
    assertThat(retried.json().getString("status")).isEqualTo("CLOSED");
    assertThat(retried.json().getString("closeReason")).isEqualTo("TIMEOUT");
    assertThat(Sql.count("SELECT count(*) FROM close_failures")).as("a closed order's failures are forgotten").isZero();
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ? AND event = 'CLOSED'", poisoned)).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_CLOSED'", poisoned)).isEqualTo(1);
    assertThat(api.stock("FINE").getLong("available")).isEqualTo(100);
    assertThat(api.stock("FINE").getLong("reserved")).isZero();
    assertThat(api.stock("POISON").getLong("available")).as("released once").isEqualTo(100);
    assertThat(api.stock("POISON").getLong("reserved")).isZero();

    // Not parked any more: a second retry is refused, as is one of no order; nothing changes.
    Api.Response again = api.post("/v1/admin/orders/" + poisoned + "/retry", Api.ADMIN_KEY);
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.code()).isEqualTo("order_not_parked");
    Api.Response none = api.post("/v1/admin/orders/12345/retry", Api.ADMIN_KEY);
    assertThat(none.status()).isEqualTo(404);
    assertThat(none.code()).isEqualTo("order_not_found");
    assertThat(api.get("/v1/admin/orders/parked", Api.ADMIN_KEY).json().getJsonArray("orders")).isEmpty();
    Await.until("the parked gauge to read 0", WAIT, () -> Metrics.value(api, "ordertimeout_orders_parked") == 0.0);
    Await.until("the PARKED_ORDERS alarm to clear", WAIT, () -> !service.service().alarms().isFiring(Alarms.Code.PARKED_ORDERS));
    assertThat(api.stock("POISON").getLong("available")).as("still released once").isEqualTo(100);
  }

  /**
   * The list pages by id with an opaque cursor of its own; the raw order id it handed out before is still taken, and
   * counted; a cursor it did not hand out (garbage, another list's, beyond 64 bits) answers 400 invalid_cursor.
   */
  @Test
  void theParkedListPagesByIdWithAnOpaqueCursorAndRefusesABadOne() {
    long[] ids = parkedOrders(3);
    List<String> byId = Arrays.stream(ids).sorted().mapToObj(Long::toString).toList();
    double rawBefore = rawCursors();
    JsonObject first = api.get("/v1/admin/orders/parked?limit=2", Api.ADMIN_KEY).json();
    assertThat(ids(first)).containsExactlyElementsOf(byId.subList(0, 2));
    String next = first.getString("next");
    assertThat(next).as("opaque, not the raw id").doesNotContain(byId.get(1)).doesNotMatch("[0-9]+");
    JsonObject second = api.get("/v1/admin/orders/parked?limit=2&cursor=" + next, Api.ADMIN_KEY).json();
    assertThat(ids(second)).containsExactlyElementsOf(byId.subList(2, 3));
    assertThat(second.getValue("next")).isNull();
    assertThat(rawCursors()).as("opaque cursors are not counted").isEqualTo(rawBefore);

    JsonObject afterRawId = api.get("/v1/admin/orders/parked?limit=2&cursor=" + byId.get(0), Api.ADMIN_KEY).json();
    assertThat(ids(afterRawId)).as("a raw order id, the cursor of before")
        .containsExactlyElementsOf(byId.subList(1, 3));
    assertThat(afterRawId.getValue("next")).isNull();
    assertThat(rawCursors() - rawBefore).as("the page asked for with a raw id, counted").isEqualTo(1);

    String searchCursor = api.get("/v1/admin/orders?limit=1", Api.ADMIN_KEY).json().getString("next");
    assertThat(searchCursor).isNotNull();
    for (String cursor : List.of("abc", "%21%21", searchCursor, "x".repeat(65), "-1", "9999999999999999999")) {
      Api.Response response = api.get("/v1/admin/orders/parked?cursor=" + cursor, Api.ADMIN_KEY);
      assertThat(response.status()).as(cursor + ": " + response.body()).isEqualTo(400);
      assertThat(response.code()).as(cursor).isEqualTo("invalid_cursor");
    }
    assertThat(api.get("/v1/admin/orders/parked?limit=0", Api.ADMIN_KEY).code()).isEqualTo("invalid_field");
    assertThat(api.get("/v1/admin/orders/parked", Api.USER_KEY).status()).isEqualTo(403);
    // An admin's close settles a parked order too, and forgets its failures.
    for (long id : ids) {
      assertThat(api.adminClose(Long.toString(id)).status()).isEqualTo(200);
    }
    assertThat(Sql.count("SELECT count(*) FROM close_failures")).isZero();
  }
  private double rawCursors() {
    Prometheus metrics = new Prometheus(api.get("/metrics", null).body());
    return metrics.sum("ordertimeout_http_raw_cursors_total", "list", "parked");
  }


  private static List<String> ids(JsonObject page) {
    return page.getJsonArray("orders").stream().map(o -> ((JsonObject) o).getString("id")).toList();
  }

  /** {@code count} unpaid orders of SKU-1, each parked (by its row in close_failures, not by failed closes). */
  private long[] parkedOrders(int count) {
    api.setStock("SKU-1", 100);
    long[] ids = new long[count];
    for (int i = 0; i < count; i++) {
      ids[i] = Long.parseLong(create("u-" + i, 600, "SKU-1", 1).getString("id"));
      Sql.execute("INSERT INTO close_failures (order_id, failures, first_failed_at, last_failed_at, last_error, "
          + "parked_at) VALUES (?, 3, now(), now(), 'x', now())", ids[i]);
    }
    return ids;
  }

  /** A last page that happens to be full says there is no page after it: no request for an empty one. */
  @Test
  void anExactlyFullLastPageHasNoNext() {
    long[] ids = parkedOrders(2);
    JsonObject whole = api.get("/v1/admin/orders/parked?limit=2", Api.ADMIN_KEY).json();
    assertThat(whole.getJsonArray("orders")).hasSize(2);
    assertThat(whole.getValue("next")).as("all of them on one full page").isNull();
    JsonObject first = api.get("/v1/admin/orders/parked?limit=1", Api.ADMIN_KEY).json();
    assertThat(first.getJsonArray("orders")).hasSize(1);
    assertThat(first.getString("next")).isNotNull();
    JsonObject last = api.get("/v1/admin/orders/parked?limit=1&cursor=" + first.getString("next"), Api.ADMIN_KEY)
        .json();
    assertThat(last.getJsonArray("orders")).extracting(o -> ((JsonObject) o).getString("id"))
        .containsExactly(Long.toString(Math.max(ids[0], ids[1])));
    assertThat(last.getValue("next")).as("the last page, full").isNull();
    for (long id : ids) {
      assertThat(api.adminClose(Long.toString(id)).status()).isEqualTo(200);
    }
  }
}
