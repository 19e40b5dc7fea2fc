package ordertimeout.metrics;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.Label;
import io.vertx.micrometer.MicrometerMetricsOptions;
import io.vertx.micrometer.VertxPrometheusOptions;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * One Prometheus registry per node, and a Vert.x instance that reports into it: worker pools, the HTTP server's
 * requests ({@link HttpRequestTimes}: by route, never by raw path), the SQL client pools, the event bus by address
 * (the few of {@code ordertimeout.bus.Addresses}; Vert.x leaves its reply addresses out) and the JVM (memory, GC,
 * threads, class loading, CPU, uptime).
 */
public final class Telemetry {
  /** vertx-micrometer-metrics keeps its registries by name, JVM-wide: every node in one JVM (tests) needs its own. */
  private static final AtomicInteger REGISTRY_NAMES = new AtomicInteger();

  private Telemetry() {}

  public static PrometheusMeterRegistry newRegistry() {
    return new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  }

  public static Vertx meteredVertx(VertxOptions options, PrometheusMeterRegistry registry) {
    MicrometerMetricsOptions metrics = new MicrometerMetricsOptions()
        .setEnabled(true)
        .setRegistryName("order-timeout-" + REGISTRY_NAMES.incrementAndGet())
        .setJvmMetricsEnabled(true)
        .setPrometheusOptions(new VertxPrometheusOptions().setEnabled(true))
        .addLabels(Label.EB_ADDRESS);
    return Vertx.builder()
        .with(options.setMetricsOptions(metrics))
        .withMetrics(NodeVertxMetrics.factory(registry))
        .build();
  }
}
