package ordertimeout.limit;

import io.vertx.core.Future;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Response;
import ordertimeout.bus.PermitGrant;
import ordertimeout.config.AppConfig;
import ordertimeout.redis.RedisClient;
import ordertimeout.redis.Scripts;

import java.util.List;

/**
 * Token buckets shared by every node through Redis ({@link Scripts#TOKEN_BUCKET}): one round trip per
 * request, refilled by the Redis server's clock. Every node must be configured with the same rate and
 * burst: each call passes its own.
 */
final class ClusterBuckets {
  private final RedisClient redis;
  private final AppConfig.Redis config;

  ClusterBuckets(RedisClient redis) {
    this.redis = redis;
    this.config = redis.config();
  }

  static String key(String prefix, String bucket) {
    return prefix + ":bucket:" + bucket;
  }

  /**
   * Takes up to {@code permits}. Past {@code redis.timeoutMillis} the caller gets a failure, but the script still
   * runs when Redis gets to it (a stall, a fork for a snapshot): the permits it grants then are given back, or they
   * would be gone for every node while nobody used them.
   */
  Future<PermitGrant> take(String bucket, int ratePerSecond, int burst, int permits) {
    List<String> keys = List.of(key(config.keyPrefix(), bucket));
    List<String> args = List.of(Integer.toString(ratePerSecond), Integer.toString(burst), Integer.toString(permits));
    Redis client = redis.current();
    Future<Response> call = Scripts.TOKEN_BUCKET.run(client, keys, args);
    return redis.bounded(client, call)
        .map(reply -> new PermitGrant(reply.get(0).toInteger(), reply.get(1).toLong()))
        .onFailure(late -> call.onSuccess(reply -> {
          int granted = reply.get(0).toInteger();
          if (granted > 0) {
            giveBack(bucket, burst, granted);
          }
        }));
  }

  /** Puts back {@code permits} taken but not used, up to the burst; one lost to a Redis failure costs some rate. */
  Future<Void> giveBack(String bucket, int burst, int permits) {
    List<String> keys = List.of(key(config.keyPrefix(), bucket));
    List<String> args = List.of(Integer.toString(burst), Integer.toString(permits));
    return redis.call(client -> Scripts.TOKEN_REFUND.run(client, keys, args)).mapEmpty();
  }
}
