package ordertimeout.order;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.time.Instant;
import java.util.List;

/**
 * An order as stored; times come from the database clock. {@code holdUntil}: set once a payment started, the close
 * waits until then (null otherwise).
 */
public record Order(
    long id,
    String userId,
    String category,
    OrderStatus status,
    CloseReason closeReason,
    List<OrderItem> items,
    Instant createdAt,
    Instant closeAt,
    Instant remindAt,
    Instant paidAt,
    Instant closedAt,
    Instant holdUntil) {

  /** The API representation: the id as a string (64-bit ids lose precision as JSON numbers), ISO-8601 UTC times. */
  public JsonObject toJson() {
    JsonArray itemsJson = new JsonArray();
    items.forEach(item -> itemsJson.add(new JsonObject().put("sku", item.sku()).put("qty", item.qty())));
    return new JsonObject()
        .put("id", Long.toString(id))
        .put("userId", userId)
        .put("category", category)
        .put("status", status.name())
        .put("closeReason", closeReason == null ? null : closeReason.name())
        .put("items", itemsJson)
        .put("createdAt", iso(createdAt))
        .put("closeAt", iso(closeAt))
        .put("remindAt", iso(remindAt))
        .put("paidAt", iso(paidAt))
        .put("closedAt", iso(closedAt))
        .put("holdUntil", iso(holdUntil));
  }

  /** The order back from {@link #toJson()} (or from a stored answer written before holdUntil existed: none). */
  public static Order fromJson(JsonObject json) {
    List<OrderItem> items = json.getJsonArray("items").stream()
        .map(item -> (JsonObject) item)
        .map(item -> new OrderItem(item.getString("sku"), item.getInteger("qty")))
        .toList();
    String closeReason = json.getString("closeReason");
    return new Order(Long.parseLong(json.getString("id")), json.getString("userId"), json.getString("category"),
        OrderStatus.valueOf(json.getString("status")), closeReason == null ? null : CloseReason.valueOf(closeReason), items,
        instant(json, "createdAt"), instant(json, "closeAt"), instant(json, "remindAt"), instant(json, "paidAt"),
        instant(json, "closedAt"), instant(json, "holdUntil"));
  }

  /** This order as a close at {@code at} for {@code reason} leaves it: its status, reason and close time change. */
  public Order closed(CloseReason reason, Instant at) {
    return new Order(id, userId, category, OrderStatus.CLOSED, reason, items, createdAt, closeAt, remindAt, paidAt, at,
        holdUntil);
  }

  /** When its close is due: its deadline, or the end of the hold of a started payment if that is later. */
  public Instant dueAt() {
    return holdUntil != null && holdUntil.isAfter(closeAt) ? holdUntil : closeAt;
  }

  private static Instant instant(JsonObject json, String field) {
    String text = json.getString(field);
    return text == null ? null : Instant.parse(text);
  }

  private static String iso(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
