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
    Optional<Integer> remindAfterSeconds) {

  /** The same order under another id (and so in that id's shard). */
  public NewOrder withId(long newId, int shards) {
    return new NewOrder(newId, OrderIds.shardOf(newId, shards), userId, category, items, timeoutSeconds, remindAfterSeconds);
  }
}
