package ordertimeout.sweep;

import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.DueOrders;
import ordertimeout.order.OrderIds;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node that dies between a create's commit and sending its timers leaves the order with no timer on its shard's
 * owner, which reloads nothing as long as it lives (NodeKillTest saw the sweep close such an order a minute late). The
 * client sends the create again with the same key: the replay puts the timers back, and the wheel closes the order on
 * time. The lost timers are simulated by cancelling them; the sweep's grace is a minute, so that only the wheel can
 * close the order within the test's wait.
 */
class ReplayedCreateTimerTest extends ServiceTestBase {

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_SWEEP_GRACE_SECONDS", "60");
  }

  @Test
  void aCreateSentAgainPutsBackTheTimersOfItsUnpaidOrder() {
    api.setStock("SKU-R", 10);
    String key = UUID.randomUUID().toString();
    JsonObject body = orderBody("u-replay", 3, "SKU-R", 1);
    Api.Response created = api.createOrder(key, body);
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    long id = Long.parseLong(created.json().getString("id"));
    int shard = OrderIds.shardOf(id, TestDatabase.SHARDS);
    long before = pendingInShard(shard);
    service.vertx().eventBus().send(Addresses.TIMER_CANCEL, CancelTimers.one(id));
    // the shared service's wheel may hold other tests' timers: count this order's shard only
    Await.until("the order's timer gone from the wheel", Duration.ofSeconds(10), () -> pendingInShard(shard) < before);

    Api.Response replayed = api.createOrder(key, body);
    assertThat(replayed.status()).as(replayed.body()).isEqualTo(201);
    assertThat(replayed.json().getString("id")).isEqualTo(Long.toString(id));

    Await.until("the order closed by the wheel, not left to the sweep", Duration.ofSeconds(20),
        () -> statusOf(Long.toString(id)).equals("CLOSED"));
    assertThat(service.service().stats().timeoutCloses(DueOrders.Path.WHEEL)).isEqualTo(1);
    assertThat(service.service().stats().timeoutCloses(DueOrders.Path.SWEEP)).isZero();
  }

  private long pendingInShard(int shard) {
    return api.stats().getJsonObject("pendingTimers").getJsonArray("byShard").getLong(shard);
  }
}
