package ordertimeout.redis;

import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import ordertimeout.config.AppConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * The service's pooled client to {@code redis.url}, every call bounded by {@code redis.timeoutMillis}. After a failover
 * behind one host name, pooled connections may still reach the old server, now a replica or loading its data: every
 * call on them fails, and the pool never drops them. So after a reply READONLY, LOADING or MASTERDOWN, or
 * {@value #TIMEOUTS_BEFORE_REBUILD} timeouts in a row, the client is closed and built again: its connections are opened
 * anew, to wherever the name leads now. While an outage lasts the client is rebuilt at most once every
 * {@value #SECONDS_BETWEEN_REBUILDS} s, and only the first rebuild of a run is logged at INFO. Use from one context.
 */
public final class RedisClient {
  static final int TIMEOUTS_BEFORE_REBUILD = 3;
  static final int SECONDS_BETWEEN_REBUILDS = 10;
  /** A rebuild this soon after the last one belongs to the same outage: it is logged at DEBUG. */
  private static final long SAME_RUN_NANOS = TimeUnit.MINUTES.toNanos(1);
  /** Connections per client; they pipeline, so a few serve thousands of calls a second. */
  private static final int POOL_SIZE = 4;
  private static final int POOL_WAITING = 4096;
  /**
   * A connection whose data has gone unacknowledged this long is ended by the kernel (TCP_USER_TIMEOUT): its server
   * vanished without a word (a host gone, a partition), and TCP would otherwise retry for about 15 minutes. A live
   * server that reads nothing for longer (stalled) is cut too, once its socket buffers fill and its kernel advertises
   * a zero window: its calls have timed out by then anyway. Rebuilds drop such connections too, but only those of a
   * client that has answered. Only on Netty's epoll transport (Linux on x86-64, the pom's); Java NIO ignores it.
   */
  static final int UNACKNOWLEDGED_MILLIS = 10_000;
  private static final List<String> NOT_SERVING = List.of("READONLY", "LOADING", "MASTERDOWN");
  private static final Logger log = LoggerFactory.getLogger(RedisClient.class);

  private final Vertx vertx;
  private final AppConfig.Redis config;
  private final long nanosBetweenRebuilds;
  private Redis current;
  private boolean answeredSinceBuilt;
  private int timeoutsInARow;
  private long lastCountedTimeoutNanos;
  private long lastRebuildNanos;
  private long rebuilds;
  private boolean closed;

  public RedisClient(Vertx vertx, AppConfig.Redis config) {
    this(vertx, config, Duration.ofSeconds(SECONDS_BETWEEN_REBUILDS));
  }

  /** Tests make the time between rebuilds short. */
  RedisClient(Vertx vertx, AppConfig.Redis config, Duration timeBetweenRebuilds) {
    this.vertx = vertx;
    this.config = config;
    this.nanosBetweenRebuilds = timeBetweenRebuilds.toNanos();
    this.current = build();
    this.lastCountedTimeoutNanos = System.nanoTime();
  }

  /** Connections are opened on first use and again after Redis comes back. */
  private Redis build() {
    return Redis.createClient(vertx, options(config));
  }

  /**
   * SO_KEEPALIVE is the Redis client's default, kept here: an idle pooled connection to a host that vanished ends once
   * the kernel's probes go unanswered (after its {@code net.ipv4.tcp_keepalive_time}, two hours unless tuned; the pool
   * recycles a connection idle for three minutes first). A connection with a call in flight ends after
   * {@value #UNACKNOWLEDGED_MILLIS} ms.
   */
  static RedisOptions options(AppConfig.Redis config) {
    RedisOptions options = new RedisOptions()
        .setConnectionString(config.url())
        .setMaxPoolSize(POOL_SIZE)
        .setMaxPoolWaiting(POOL_WAITING);
    options.getNetClientOptions()
        .setConnectTimeout(config.timeoutMillis())
        .setTcpNoDelay(true)
        .setTcpKeepAlive(true)
        .setTcpUserTimeout(UNACKNOWLEDGED_MILLIS);
    return options;
  }

  public AppConfig.Redis config() {
    return config;
  }

  /** The client calls go out on now; a caller that keeps the unbounded call passes it to {@link #bounded}. */
  public Redis current() {
    return current;
  }

  public Future<Response> send(Request request) {
    return call(redis -> redis.send(request));
  }

  public Future<Response> call(Function<Redis, Future<Response>> call) {
    Redis used = current;
    return bounded(used, call.apply(used));
  }

  /** {@code call} sent on {@code used}, failed with a timeout when Redis has not answered within the bound. */
  public <T> Future<T> bounded(Redis used, Future<T> call) {
    long sentNanos = System.nanoTime();
    return call.timeout(config.timeoutMillis(), TimeUnit.MILLISECONDS)
        .onComplete(outcome -> look(used, sentNanos, outcome));
  }

  private void look(Redis used, long sentNanos, AsyncResult<?> outcome) {
    if (used != current) {
      return;
    }
    if (outcome.succeeded()) {
      answeredSinceBuilt = true;
      timeoutsInARow = 0;
      return;
    }
    Throwable failure = outcome.cause();
    String notServing = notServing(failure);
    if (notServing != null) {
      rebuild(notServing + " reply");
    } else if (failure instanceof TimeoutException && countsAsATimeoutInARow(sentNanos)
        && ++timeoutsInARow >= TIMEOUTS_BEFORE_REBUILD) {
      rebuild(timeoutsInARow + " timeouts in a row");
    }
  }

  /**
   * Only a call sent after the last counted timeout fired counts, so that calls sent together and timed out by one
   * hiccup count once. A client that never answered has nothing to drop: its connections are still being opened.
   */
  private boolean countsAsATimeoutInARow(long sentNanos) {
    if (!answeredSinceBuilt || sentNanos - lastCountedTimeoutNanos < 0) {
      return false;
    }
    lastCountedTimeoutNanos = System.nanoTime();
    return true;
  }

  /** READONLY, LOADING or MASTERDOWN when Redis answered so, also from inside a script; else null. */
  private static String notServing(Throwable failure) {
    String message = failure.getMessage();
    if (message == null) {
      return null;
    }
    for (String code : NOT_SERVING) {
      if (message.startsWith(code) || message.contains("-" + code + " ")) {
        return code;
      }
    }
    return null;
  }

  private void rebuild(String why) {
    long now = System.nanoTime();
    if (closed) {
      return;
    }
    boolean sameRun = rebuilds > 0 && now - lastRebuildNanos < SAME_RUN_NANOS;
    if (rebuilds > 0 && now - lastRebuildNanos < nanosBetweenRebuilds) {
      log.debug("redis client not rebuilt after {}: it was rebuilt less than {} ms ago", why,
          TimeUnit.NANOSECONDS.toMillis(nanosBetweenRebuilds));
      return;
    }
    Redis stale = current;
    current = build();
    answeredSinceBuilt = false;
    timeoutsInARow = 0;
    lastCountedTimeoutNanos = now;
    lastRebuildNanos = now;
    rebuilds++;
    if (sameRun) {
      log.debug("redis client rebuilt again after {}", why);
    } else {
      log.info("redis client rebuilt after {}: its connections may reach a server that no longer serves redis.url "
          + "(a failover); new connections go to wherever the url leads now", why);
    }
    stale.close();
  }

  /** How often the client was built again; for tests. */
  long rebuilds() {
    return rebuilds;
  }

  /** Also stops any later rebuild: a client built after this would be closed by nothing. */
  public Future<Void> close() {
    closed = true;
    return current.close();
  }
}
