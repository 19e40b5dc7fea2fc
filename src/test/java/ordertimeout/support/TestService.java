package ordertimeout.support;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.Service;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The real service (every verticle) on its own Vert.x instance against the shared test database,
 * configured from conf/application.yaml with environment-style overrides.
 */
public final class TestService implements AutoCloseable {
  private final Vertx vertx;
  private final Service service;
  private final Api api;
  private final AppConfig config;

  private TestService(Vertx vertx, Service service, AppConfig config) {
    this.vertx = vertx;
    this.service = service;
    this.config = config;
    this.api = new Api(config.http().port());
  }

  /** Starts with a fast sweep, short reminders and no daily reconciliation; {@code overrides} are OT_* variables. */
  public static TestService start(Map<String, String> overrides) {
    Map<String, String> environment = new HashMap<>();
    environment.put("OT_HTTP_PORT", Integer.toString(Ports.free()));
    environment.put("OT_SWEEP_INTERVAL_SECONDS", "1");
    environment.put("OT_SWEEP_GRACE_SECONDS", "1");
    environment.put("OT_ORDERS_REMINDER_BEFORE_SECONDS", "1");
    environment.put("OT_ORDERS_MAX_UNPAID_PER_USER", "1000");
    // No daily reconciliation: it would run at every start on a database whose runs the tests empty.
    environment.put("OT_RECONCILIATION_AT", "off");
    environment.putAll(overrides);
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
    Service service = await(Service.start(config, TestDatabase.connectOptions()));
    return new TestService(service.vertx(), service, config);
  }

  public static TestService start() {
    return start(Map.of());
  }

  public Api api() {
    return api;
  }

  public AppConfig config() {
    return config;
  }

  public Service service() {
    return service;
  }

  public Vertx vertx() {
    return vertx;
  }

  /** The shards this node owns now, as its stats report them. */
  public Set<Integer> ownedShards() {
    return Arrays.stream(service.ownedShards().list()).boxed().collect(Collectors.toSet());
  }

  @Override
  public void close() {
    await(service.stop());
  }

  public static <T> T await(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

}
