package ordertimeout.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.datagram.DatagramSocketOptions;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.spi.metrics.ClientMetrics;
import io.vertx.core.spi.metrics.DatagramSocketMetrics;
import io.vertx.core.spi.metrics.EventBusMetrics;
import io.vertx.core.spi.metrics.HttpClientMetrics;
import io.vertx.core.spi.metrics.HttpServerMetrics;
import io.vertx.core.spi.metrics.PoolMetrics;
import io.vertx.core.spi.metrics.TCPMetrics;
import io.vertx.core.spi.metrics.VertxMetrics;
import io.vertx.micrometer.MicrometerMetricsFactory;

/**
 * Vert.x's Micrometer metrics (pools, event bus, HTTP and SQL clients, JVM), except the HTTP server's, which
 * {@link HttpRequestTimes} measures at a fraction of their cost (decision 0040).
 */
final class NodeVertxMetrics implements VertxMetrics {
  private final VertxMetrics micrometer;
  private final MeterRegistry registry;

  private NodeVertxMetrics(VertxMetrics micrometer, MeterRegistry registry) {
    this.micrometer = micrometer;
    this.registry = registry;
  }

  /** The factory to give {@code Vertx.builder().withMetrics}. */
  static MicrometerMetricsFactory factory(MeterRegistry registry) {
    return new MicrometerMetricsFactory(registry) {
      @Override
      public VertxMetrics metrics(VertxOptions options) {
        return new NodeVertxMetrics(super.metrics(options), registry);
      }
    };
  }

  @Override
  public HttpServerMetrics<?, ?, ?> createHttpServerMetrics(HttpServerOptions options, SocketAddress localAddress) {
    return new HttpRequestTimes(registry);
  }

  @Override
  public EventBusMetrics<?> createEventBusMetrics() {
    return micrometer.createEventBusMetrics();
  }

  @Override
  public ClientMetrics<?, ?, ?> createClientMetrics(SocketAddress remoteAddress, String type, String namespace) {
    return micrometer.createClientMetrics(remoteAddress, type, namespace);
  }

  @Override
  public HttpClientMetrics<?, ?, ?> createHttpClientMetrics(HttpClientOptions options) {
    return micrometer.createHttpClientMetrics(options);
  }

  @Override
  public TCPMetrics<?> createNetServerMetrics(NetServerOptions options, SocketAddress localAddress) {
    return micrometer.createNetServerMetrics(options, localAddress);
  }

  @Override
  public TCPMetrics<?> createNetClientMetrics(NetClientOptions options) {
    return micrometer.createNetClientMetrics(options);
  }

  @Override
  public DatagramSocketMetrics createDatagramSocketMetrics(DatagramSocketOptions options) {
    return micrometer.createDatagramSocketMetrics(options);
  }

  @Override
  public PoolMetrics<?, ?> createPoolMetrics(String poolType, String poolName, int maxPoolSize) {
    return micrometer.createPoolMetrics(poolType, poolName, maxPoolSize);
  }

  @Override
  public void vertxCreated(Vertx vertx) {
    micrometer.vertxCreated(vertx);
  }

  @Override
  public boolean isMetricsEnabled() {
    return micrometer.isMetricsEnabled();
  }

  @Override
  public void close() {
    micrometer.close();
  }
}
