package ordertimeout.faults;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The operations of one scenario, drawn from its seed before anything runs, so that a seed replays the same run:
 * creates at a fixed rate (times the overload factor within the overload window), each with its own user and
 * idempotency key, 1-3 of the scenario's SKUs and a deadline of 3-10 s; about 60% paid at a random point of
 * their deadline (some after it: those race the close), and about half read once.
 */
record LoadPlan(String tag, long seed, List<PlannedCreate> creates) {
  static final int SKUS = 100;
  static final long STOCK_PER_SKU = 1_000_000;
  private static final double PAID_SHARE = 0.6;
  private static final double READ_SHARE = 0.5;

  /** Creates per second: {@code baseRate}, times {@code overloadFactor} from {@code overloadFrom} for {@code overloadSeconds}. */
  record Shape(int baseRate, int seconds, int overloadFrom, int overloadSeconds, int overloadFactor) {
    static Shape steady(int baseRate, int seconds) {
      return new Shape(baseRate, seconds, 0, 0, 1);
    }

    double rateAt(double second) {
      boolean overloaded = second >= overloadFrom && second < overloadFrom + overloadSeconds;
      return overloaded ? baseRate * (double) overloadFactor : baseRate;
    }
  }

  /** One create, and what follows it once it succeeded: a pay and a read, each so long after the create was due (-1: none). */
  record PlannedCreate(int index, long dueMillis, String userId, String idempotencyKey, JsonObject body,
                       long payAfterMillis, long readAfterMillis) {}

  static LoadPlan draw(String tag, long seed, Shape shape) {
    Random random = new Random(seed);
    List<PlannedCreate> creates = new ArrayList<>();
    double at = 0;
    for (int index = 0; at < shape.seconds() * 1000.0; index++) {
      JsonArray items = new JsonArray();
      int firstSku = random.nextInt(SKUS);
      for (int item = 0, count = 1 + random.nextInt(3); item < count; item++) {
        items.add(new JsonObject().put("sku", sku(tag, (firstSku + item * 37) % SKUS)).put("qty", 1 + random.nextInt(3)));
      }
      int timeoutSeconds = 3 + random.nextInt(8);
      String userId = tag + "-u" + index;
      JsonObject body = new JsonObject().put("userId", userId).put("items", items).put("timeoutSeconds", timeoutSeconds);
      long payAfter = random.nextDouble() < PAID_SHARE ? (long) (timeoutSeconds * 1000 * (0.1 + random.nextDouble())) : -1;
      long readAfter = random.nextDouble() < READ_SHARE ? (long) (timeoutSeconds * 1000 * random.nextDouble()) : -1;
      creates.add(new PlannedCreate(index, (long) at, userId, tag + "-k" + index, body, payAfter, readAfter));
      at += 1000.0 / shape.rateAt(at / 1000.0);
    }
    return new LoadPlan(tag, seed, creates);
  }

  static String sku(String tag, int n) {
    return tag + "-sku-" + n;
  }
}
