package ordertimeout.http;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import ordertimeout.metrics.Meters;

/** Whether the node is draining (from SIGTERM on): then it is not ready and refuses new orders with 503 {@code draining}. */
public final class Draining {
  private volatile boolean on;

  public Draining(MeterRegistry registry) {
    Gauge.builder(Meters.DRAINING, this, draining -> draining.on ? 1 : 0)
        .description("1 from SIGTERM on: the node is not ready and refuses new orders while its close batches finish")
        .strongReference(true)
        .register(registry);
  }

  public void start() {
    on = true;
  }

  public boolean isOn() {
    return on;
  }
}
