package ordertimeout.order;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The API representation of an order, which is also what an idempotent replay reads back from the database. */
class OrderJsonTest {
  private static final Instant CREATED = Instant.parse("2025-03-01T10:00:00.123456Z");

  private static Order closed() {
    return new Order(Long.MAX_VALUE, "u-1", "flash", OrderStatus.CLOSED, CloseReason.USER_CANCELLED,
        List.of(new OrderItem("SKU-A", 2), new OrderItem("SKU-B", 1)), CREATED, CREATED.plusSeconds(900),
        CREATED.plusSeconds(840), null, CREATED.plusSeconds(30), CREATED.plusSeconds(1500));
  }

  private static Order unpaid() {
    return new Order(7, "u-2", "standard", OrderStatus.UNPAID, null, List.of(new OrderItem("SKU-A", 1)), CREATED,
        CREATED.plusSeconds(60), null, null, null, null);
  }

  @Test
  void writesTheIdAsAStringAndTimesAsIso8601Utc() {
    JsonObject json = closed().toJson();
    assertThat(json.getValue("id")).as("64-bit ids lose precision as JSON numbers").isEqualTo("9223372036854775807");
    assertThat(json.getString("userId")).isEqualTo("u-1");
    assertThat(json.getString("category")).isEqualTo("flash");
    assertThat(json.getString("status")).isEqualTo("CLOSED");
    assertThat(json.getString("closeReason")).isEqualTo("USER_CANCELLED");
    assertThat(json.getJsonArray("items")).isEqualTo(new JsonArray()
        .add(new JsonObject().put("sku", "SKU-A").put("qty", 2))
        .add(new JsonObject().put("sku", "SKU-B").put("qty", 1)));
    assertThat(json.getString("createdAt")).isEqualTo("2025-03-01T10:00:00.123456Z");
    assertThat(json.getString("closeAt")).isEqualTo("2025-03-01T10:15:00.123456Z");
    assertThat(json.getString("remindAt")).isEqualTo("2025-03-01T10:14:00.123456Z");
    assertThat(json.getString("closedAt")).isEqualTo("2025-03-01T10:00:30.123456Z");
    assertThat(json.containsKey("paidAt")).as("present, as null").isTrue();
    assertThat(json.getValue("paidAt")).isNull();
  }

  @Test
  void anUnpaidOrderHasNoCloseReasonAndNoTimesItHasNotReached() {
    JsonObject json = unpaid().toJson();
    assertThat(json.getString("status")).isEqualTo("UNPAID");
    for (String field : List.of("closeReason", "remindAt", "paidAt", "closedAt")) {
      assertThat(json.containsKey(field)).as(field).isTrue();
      assertThat(json.getValue(field)).as(field).isNull();
    }
  }

  @Test
  void readsBackWhatItWrote() {
    for (Order order : List.of(closed(), unpaid())) {
      assertThat(Order.fromJson(order.toJson())).isEqualTo(order);
      assertThat(Order.fromJson(new JsonObject(order.toJson().encode()))).as("through its text").isEqualTo(order);
    }
    Order paid = new Order(8, "u-3", "standard", OrderStatus.PAID, null, List.of(new OrderItem("SKU-C", 3)), CREATED,
        CREATED.plusSeconds(60), CREATED.plusSeconds(30), CREATED.plusSeconds(5), null, null);
    assertThat(Order.fromJson(paid.toJson())).isEqualTo(paid);
  }
}
