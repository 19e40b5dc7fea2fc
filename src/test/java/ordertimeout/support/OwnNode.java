package ordertimeout.support;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.Service;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The real service, like {@link TestService} (same defaults), but on a Vert.x instance the test made
 * (for instance with an interceptor on its event bus before anything is deployed) and reaching the
 * database through connection options of the test's choosing (for instance a {@link TcpProxy}).
 */
public final class OwnNode implements AutoCloseable {
  private final Service service;
  private final AppConfig config;
  private final Api api;

  private OwnNode(Service service, AppConfig config) {
    this.service = service;
    this.config = config;
    this.api = new Api(config.http().port());
  }

  /**
   * Starts every verticle on {@code vertx}, which {@link #close()} closes, with no daily reconciliation;
   * {@code overrides} are OT_* variables.
   */
  public static OwnNode start(Vertx vertx, PgConnectOptions database, Map<String, String> overrides) {
    Map<String, String> environment = new HashMap<>();
    environment.put("OT_HTTP_PORT", Integer.toString(Ports.free()));
    environment.put("OT_SWEEP_INTERVAL_SECONDS", "1");
    environment.put("OT_SWEEP_GRACE_SECONDS", "1");
    environment.put("OT_ORDERS_REMINDER_BEFORE_SECONDS", "1");
    environment.put("OT_ORDERS_MAX_UNPAID_PER_USER", "1000");
    // No daily reconciliation, as in TestService: past its time of day it would run at start over what the tables hold.
    environment.put("OT_RECONCILIATION_AT", "off");
    environment.putAll(overrides);
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
    try {
      return new OwnNode(TestService.await(Service.start(vertx, config, database)), config);
    } catch (RuntimeException e) {
      vertx.close();
      throw e;
    }
  }

  public Service service() {
    return service;
  }

  public AppConfig config() {
    return config;
  }

  public Api api() {
    return api;
  }

  @Override
  public void close() {
    TestService.await(service.stop());
  }
}
