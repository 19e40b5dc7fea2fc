package ordertimeout.redis;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import ordertimeout.config.AppConfig;

import java.util.concurrent.TimeUnit;

/** Builds the service's Redis clients from {@code redis.*} and bounds every call by {@code redis.timeoutMillis}. */
public final class RedisClients {
  /** Connections per client; they pipeline, so a few serve thousands of calls a second. */
  private static final int POOL_SIZE = 4;
  private static final int POOL_WAITING = 4096;

  private RedisClients() {}

  /** A pooled client; connections are opened on first use and again after Redis comes back. */
  public static Redis create(Vertx vertx, AppConfig.Redis config) {
    RedisOptions options = new RedisOptions()
        .setConnectionString(config.url())
        .setMaxPoolSize(POOL_SIZE)
        .setMaxPoolWaiting(POOL_WAITING);
    options.getNetClientOptions().setConnectTimeout(config.timeoutMillis()).setTcpNoDelay(true);
    return Redis.createClient(vertx, options);
  }

  /** {@code call}, failed with a timeout when Redis has not answered within {@code redis.timeoutMillis}. */
  public static <T> Future<T> bounded(Future<T> call, AppConfig.Redis config) {
    return call.timeout(config.timeoutMillis(), TimeUnit.MILLISECONDS);
  }

  public static Future<Response> send(Redis redis, AppConfig.Redis config, Request request) {
    return bounded(redis.send(request), config);
  }
}
