package ordertimeout;

import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigException;
import ordertimeout.config.ConfigSource;
import ordertimeout.config.LogSetup;
import ordertimeout.config.Secrets;
import ordertimeout.store.DatabaseSetup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Reads the configuration (a file given as the first argument or in OT_CONFIG, else
 * conf/application.yaml), applies its logging section, prepares the database before Vert.x starts, and deploys the service.
 * On SIGTERM (or Ctrl-C) the node drains before it exits: see {@link Service#drain()}.
 */
public final class Main {
  private static final Logger log = LoggerFactory.getLogger(Main.class);

  private Main() {}

  public static void main(String[] args) {
    String configFile = args.length > 0 ? args[0] : System.getenv("OT_CONFIG");
    AppConfig config;
    DatabaseSetup database;
    try {
      config = AppConfig.from(ConfigSource.load(configFile == null ? null : Path.of(configFile), System::getenv));
      LogSetup.apply(config.logging());
      database = DatabaseSetup.prepare(config.database());
    } catch (ConfigException | IllegalArgumentException e) {
      log.error("refusing to start: {}", e.getMessage());
      System.exit(2);
      return;
    } catch (RuntimeException e) {
      log.error("cannot prepare the database: {}", Secrets.withoutPasswords(String.valueOf(e.getMessage())));
      System.exit(1);
      return;
    }
    Service.start(config, database.connectOptions())
        .onSuccess(service -> {
          Vertx vertx = service.vertx();
          log.info("order-timeout listening on http://{}:{} ({})", config.http().host(), config.http().port(),
              vertx.isNativeTransportEnabled() ? "native transport" : "Java NIO transport: " + vertx.unavailableNativeTransportCause());
          Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log.info("stopping");
            try {
              service.drain().toCompletionStage().toCompletableFuture().get(config.drain().timeoutSeconds() + 30L, TimeUnit.SECONDS);
            } catch (Exception e) {
              log.warn("did not stop cleanly: {}", e.toString());
            }
            database.close();
          }, "shutdown"));
        })
        .onFailure(failure -> {
          log.error("failed to start", failure);
          database.close();
          System.exit(1);
        });
  }
}
