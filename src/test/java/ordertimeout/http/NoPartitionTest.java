package ordertimeout.http;

import ordertimeout.order.OrderIds;
import ordertimeout.store.OrderPartitions;
import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A create whose order id has no partition of orders (the partitions job fell behind: here the test takes today's and
 * tomorrow's partitions out) answers 503 database_unavailable with Retry-After, not 500, and stores nothing.
 */
class NoPartitionTest extends ServiceTestBase {
  private static final long DAY = 86_400_000L;

  @Test
  void aCreateWithoutAPartitionForItsIdAnswers503AndStoresNothing() {
    api.setStock("SKU-NP", 10);
    long today = OrderPartitions.dayStart(System.currentTimeMillis());
    List<String[]> detached = new ArrayList<>();
    try {
      for (int d = 0; d < 2; d++) {
        long from = OrderIds.firstIdAt(today + d * DAY);
        long to = OrderIds.firstIdAt(today + (d + 1) * DAY);
        String name = OrderPartitions.name(OrderPartitions.ORDERS, from);
        Sql.executeDdl("ALTER TABLE orders DETACH PARTITION " + name);
        detached.add(new String[] {name, Long.toString(from), Long.toString(to)});
      }
      Api.Response response = api.createOrder(UUID.randomUUID().toString(), orderBody("u-np", 3600, "SKU-NP", 2));
      assertThat(response.status()).as(response.body()).isEqualTo(503);
      assertThat(response.code()).isEqualTo("database_unavailable");
      assertThat(response.raw().headers().firstValue("Retry-After")).hasValue("1");
      assertThat(response.json().getString("detail")).contains("no partition");
    } finally {
      for (String[] p : detached) {
        Sql.executeDdl("ALTER TABLE orders ATTACH PARTITION " + p[0] + " FOR VALUES FROM (" + p[1] + ") TO (" + p[2] + ")");
      }
    }
    assertThat(Sql.count("SELECT count(*) FROM orders")).isZero();
    assertThat(api.stock("SKU-NP").getLong("available")).isEqualTo(10);
    assertThat(api.stock("SKU-NP").getLong("reserved")).isZero();
    assertThat(create("u-np", 3600, "SKU-NP", 2).getString("status")).as("with its partition back").isEqualTo("UNPAID");
  }
}
