package ordertimeout.limit;

import io.vertx.core.Future;
import io.vertx.redis.client.Redis;
import ordertimeout.bus.PermitGrant;
import ordertimeout.config.AppConfig;
import ordertimeout.redis.RedisClients;
import ordertimeout.redis.Scripts;

import java.util.List;

/**
 * Token buckets shared by every node through Redis ({@link Scripts#TOKEN_BUCKET}): one round trip per
 * request, refilled by the Redis server's clock. Every node must be configured with the same rate and
 * burst: each call passes its own.
 */
final class ClusterBuckets {
  private final Redis redis;
  private final AppConfig.Redis config;

  ClusterBuckets(Redis redis, AppConfig.Redis config) {
    this.redis = redis;
    this.config = config;
  }

  static String key(String prefix, String bucket) {
    return prefix + ":bucket:" + bucket;
  }

  Future<PermitGrant> take(String bucket, int ratePerSecond, int burst, int permits) {
    List<String> args = List.of(Integer.toString(ratePerSecond), Integer.toString(burst), Integer.toString(permits));
    return RedisClients.bounded(Scripts.TOKEN_BUCKET.run(redis, List.of(key(config.keyPrefix(), bucket)), args), config)
        .map(reply -> new PermitGrant(reply.get(0).toInteger(), reply.get(1).toLong()));
  }
}
