package ordertimeout.maintenance;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import ordertimeout.redis.RedisClient;
import ordertimeout.redis.Scripts;

import java.util.List;
import java.util.function.Function;

/**
 * A lock in Redis held by whoever set {@code key} to its own {@code token}: taken with SET NX PX (a lease
 * that expires by itself when the holder dies), renewed and released only by the holder, each by a
 * compare-then-act script ({@link Scripts#LOCK_RENEW}, {@link Scripts#LOCK_RELEASE}), so a holder whose
 * lease ran out and was taken by another can never renew or delete the other's lock. It avoids duplicate
 * work only: nothing that must be correct depends on it.
 */
public final class JobLock {
  private final RedisClient redis;
  private final String key;
  private final String token;

  public JobLock(RedisClient redis, String key, String token) {
    this.redis = redis;
    this.key = key;
    this.token = token;
  }

  public String key() {
    return key;
  }

  /** True if this call took the lock for {@code leaseMillis}; false if anyone holds it (this token too). */
  public Future<Boolean> tryAcquire(long leaseMillis) {
    Request set = Request.cmd(Command.SET).arg(key).arg(token).arg("NX").arg("PX").arg(leaseMillis);
    return redis.send(set).map(reply -> reply != null && "OK".equals(reply.toString()));
  }

  /** A new lease of {@code leaseMillis} from now, if this token still holds the lock. */
  public Future<Boolean> renew(long leaseMillis) {
    return script(client -> Scripts.LOCK_RENEW.run(client, List.of(key), List.of(token, Long.toString(leaseMillis))));
  }

  /** Deletes the lock if this token holds it; true if it did. */
  public Future<Boolean> release() {
    return script(client -> Scripts.LOCK_RELEASE.run(client, List.of(key), List.of(token)));
  }

  /** The token holding the lock now, null when free. */
  public Future<String> holder() {
    return redis.send(Request.cmd(Command.GET).arg(key)).map(reply -> reply == null ? null : reply.toString());
  }

  private Future<Boolean> script(Function<Redis, Future<Response>> call) {
    return redis.call(call).map(reply -> reply != null && reply.toInteger() == 1);
  }
}
