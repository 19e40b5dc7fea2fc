package ordertimeout.order;

import java.util.List;
import java.util.Optional;

/** A validated create request with its id and deadline decided; items sorted by SKU, one line per SKU. */
public record NewOrder(
    long id,
    int shard,
    String userId,
    String category,
    List<OrderItem> items,
    int timeoutSeconds,
    Optional<Integer> remindAfterSeconds) {}
