package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.store.EventStore;
import ordertimeout.store.EventStore.Delivery;
import ordertimeout.store.EventStore.Event;
import ordertimeout.store.KeysetPage;

import java.time.Instant;
import java.util.List;
import java.util.Locale;

/**
 * The pull feed (GET /v1/events: a client's own events in commit order, a long poll when there are none yet) and
 * the admins' view of webhook deliveries (list by status, send a failed one again).
 */
final class EventRoutes {
  /** How often a long poll looks again while it waits. */
  private static final long POLL_MILLIS = 200;

  private final Vertx vertx;
  private final EventStore events;
  private final NodeStats stats;

  EventRoutes(Vertx vertx, EventStore events, NodeStats stats) {
    this.vertx = vertx;
    this.events = events;
    this.stats = stats;
  }

  void mount(Router router, ContractChecks contract) {
    router.get("/v1/events").handler(contract.validate("listEvents")).handler(this::feed);
    router.get("/v1/admin/webhooks/deliveries").handler(contract.validate("listWebhookDeliveries")).handler(this::deliveries);
    router.post("/v1/admin/webhooks/deliveries/:id/retry").handler(contract.validate("retryWebhookDelivery")).handler(this::retry);
  }

  private void feed(RoutingContext ctx) {
    long after = cursor((String) ContractChecks.parameter(ctx, "after"));
    int limit = ((Number) ContractChecks.parameter(ctx, "limit")).intValue();
    int waitSeconds = ((Number) ContractChecks.parameter(ctx, "wait")).intValue();
    AppConfig.ApiKey caller = Auth.caller(ctx);
    String client = caller.role() == AppConfig.Role.ADMIN ? null : caller.client();
    long deadline = System.nanoTime() + waitSeconds * 1_000_000_000L;
    page(after, client, limit, deadline, true, ctx.response())
        .onSuccess(page -> {
          JsonArray list = new JsonArray();
          page.forEach(event -> list.add(toJson(event)));
          long next = page.isEmpty() ? after : page.get(page.size() - 1).position();
          OrderRoutes.json(ctx, 200, new JsonObject().put("events", list).put("next", Long.toString(next)));
        })
        .onFailure(ctx::fail);
  }

  /**
   * The page after {@code after}, refused (410 {@code cursor_expired}) when the cursor lies below the highest position
   * retention deleted of the reader's events: the reader missed events it never read, and going on after them would
   * hide that. That mark comes with the page, from the same snapshot: read before it, it could miss a delete committed
   * in between, and the page would start after the gap. While the page is empty and the deadline has not passed, it is
   * asked again every {@link #POLL_MILLIS}, unless the {@code response} is closed (the client left) or ended (answered
   * 504 by {@link AnswerDeadline}): nobody would read the page then. On the {@code first} look an empty page's cursor
   * is checked: one past the last position the feed has given is refused (400 {@code invalid_cursor}) rather than
   * answered with empty pages, as its reader (a cursor of another database, a typo) would skip every event up to it
   * without knowing.
   */
  private Future<List<Event>> page(long after, String client, int limit, long deadlineNanos, boolean first,
                                   HttpServerResponse response) {
    return events.feed(after, client, limit).compose(feedPage -> {
      if (after < feedPage.deletedThrough()) {
        return Future.failedFuture(expired(after, feedPage.deletedThrough()));
      }
      List<Event> page = feedPage.events();
      if (!page.isEmpty()) {
        return Future.succeededFuture(page);
      }
      return (first ? events.lastPosition() : Future.succeededFuture(after)).compose(last -> {
        if (after > last) {
          return Future.failedFuture(ApiException.badRequest(ProblemCodes.INVALID_CURSOR, "the cursor " + after
              + " is past the feed's last position, " + last + ": not a 'next' of this feed"));
        }
        long leftMillis = (deadlineNanos - System.nanoTime()) / 1_000_000;
        if (leftMillis <= 0) {
          return Future.succeededFuture(page);
        }
        Promise<List<Event>> later = Promise.promise();
        vertx.setTimer(Math.min(POLL_MILLIS, leftMillis), id -> (response.closed() || response.ended()
            ? Future.succeededFuture(page)
            : page(after, client, limit, deadlineNanos, false, response)).onComplete(later));
        return later.future();
      });
    });
  }

  private static ApiException expired(long after, long deletedThrough) {
    return new ApiException(410, "cursor_expired", "events after the cursor " + after + ", up to position "
        + deletedThrough + ", were deleted by retention before this reader read them; ask again with after="
        + deletedThrough + " (or 0) to go on from the oldest event kept, and look for what was missed by other means");
  }

  private static long cursor(String after) {
    try {
      return after == null ? 0 : Long.parseLong(after);
    } catch (NumberFormatException e) {
      throw ApiException.badRequest(ProblemCodes.INVALID_CURSOR, "a cursor is the 'next' of an earlier page");
    }
  }

  private static JsonObject toJson(Event event) {
    return new JsonObject()
        .put("id", Long.toString(event.id()))
        .put("type", event.type())
        .put("orderId", Long.toString(event.orderId()))
        .put("at", event.at().toString())
        .put("payload", new JsonObject(event.payload()));
  }

  private void deliveries(RoutingContext ctx) {
    String status = (String) ContractChecks.parameter(ctx, "status");
    int limit = ((Number) ContractChecks.parameter(ctx, "limit")).intValue();
    Long after = KeysetCursor.WEBHOOK_DELIVERIES.lastShown(deliveriesCursor(ctx));
    EventStore.Status wanted = status == null ? null : EventStore.Status.valueOf(status.toUpperCase(Locale.ROOT));
    events.deliveries(wanted, after == null ? 0 : after, limit)
        .onSuccess(page -> {
          JsonArray body = new JsonArray();
          page.items().forEach(delivery -> body.add(toJson(delivery)));
          OrderRoutes.json(ctx, 200, new JsonObject().put("deliveries", body)
              .put("next", page.next() == null ? null : KeysetCursor.WEBHOOK_DELIVERIES.of(page.next())));
        })
        .onFailure(ctx::fail);
  }

  /** The page's {@code cursor}, or {@code after}, its name before the other lists' was taken (still taken). */
  private String deliveriesCursor(RoutingContext ctx) {
    String cursor = (String) ContractChecks.parameter(ctx, "cursor");
    String after = (String) ContractChecks.parameter(ctx, "after");
    if (cursor != null && after != null) {
      throw ApiException.badRequest(ProblemCodes.INVALID_CURSOR, "give the cursor as 'cursor' only ('after' is its old "
          + "name)");
    }
    String given = cursor != null ? cursor : after;
    if (KeysetCursor.WEBHOOK_DELIVERIES.isRawId(given)) {
      stats.rawCursorTaken("deliveries");
    }
    return given;
  }

  private void retry(RoutingContext ctx) {
    long deliveryId = ApiException.idOf((String) ContractChecks.parameter(ctx, "id"), "invalid_delivery_id",
        "a delivery id is a 64-bit number");
    events.retry(deliveryId).onSuccess(before -> {
      if (before == null) {
        ctx.fail(new ApiException(404, "delivery_not_found", "no webhook delivery " + deliveryId));
      } else if (before != EventStore.Status.FAILED) {
        ctx.fail(new ApiException(409, "delivery_not_failed",
            "webhook delivery " + deliveryId + " is " + before.name().toLowerCase(Locale.ROOT) + "; only a failed one is sent again"));
      } else {
        events.deliveries(null, deliveryId - 1, 1)
            .map(KeysetPage::items)
            .onSuccess(found -> {
              if (found.isEmpty() || found.get(0).id() != deliveryId) { // its event deleted by retention meanwhile
                ctx.fail(new ApiException(404, "delivery_not_found", "no webhook delivery " + deliveryId));
              } else {
                OrderRoutes.json(ctx, 200, toJson(found.get(0)));
              }
            })
            .onFailure(ctx::fail);
      }
    }).onFailure(ctx::fail);
  }

  private static JsonObject toJson(Delivery delivery) {
    return new JsonObject()
        .put("id", Long.toString(delivery.id()))
        .put("eventId", Long.toString(delivery.eventId()))
        .put("orderId", Long.toString(delivery.orderId()))
        .put("type", delivery.type())
        .put("url", delivery.sink())
        .put("status", delivery.status().name())
        .put("attempts", delivery.attempts())
        .put("firstAttemptAt", text(delivery.firstAttemptAt()))
        .put("nextAttemptAt", delivery.status() == EventStore.Status.PENDING ? text(delivery.nextAttemptAt()) : null)
        .put("lastError", delivery.lastError())
        .put("deliveredAt", text(delivery.deliveredAt()));
  }

  private static String text(Instant at) {
    return at == null ? null : at.toString();
  }
}
