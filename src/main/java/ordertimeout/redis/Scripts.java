package ordertimeout.redis;

/**
 * Every Lua script the service runs in Redis, kept together like the SQL. Each runs atomically: no other
 * command runs between its reads and its writes.
 */
public final class Scripts {
  /**
   * A token bucket shared by every node. KEYS[1]: a hash {tokens, at}; ARGV: rate per second, burst,
   * permits wanted. Refills by the Redis server's clock (TIME, in microseconds), never the nodes', so
   * nodes with skewed clocks share one rate. Takes up to the permits wanted and returns {granted,
   * milliseconds until the rest (at most a burst) will have refilled}. A stored time ahead of the server's clock
   * (the clock stepped back, or a failover to a server whose clock is behind) is moved back to it, so the bucket
   * goes on refilling instead of waiting for the old time. The key expires once the bucket would be full again: a
   * missing key and a full bucket mean the same.
   */
  public static final LuaScript TOKEN_BUCKET = new LuaScript("token-bucket", """
      if redis.replicate_commands then redis.replicate_commands() end
      local rate = tonumber(ARGV[1])
      local burst = tonumber(ARGV[2])
      local wanted = tonumber(ARGV[3])
      local time = redis.call('TIME')
      local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
      local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
      local tokens = tonumber(state[1])
      local at = tonumber(state[2])
      if tokens == nil or at == nil then
        tokens = burst
        at = now
      end
      if now > at then
        tokens = math.min(burst, tokens + (now - at) * rate / 1000000)
      end
      at = now
      local granted = math.max(0, math.min(wanted, math.floor(tokens)))
      tokens = tokens - granted
      local wait = 0
      local missing = wanted - granted
      if missing > 0 then
        local target = math.min(missing, burst)
        if tokens < target then
          wait = math.ceil((target - tokens) * 1000 / rate)
        end
        wait = math.max(1, wait)
      end
      redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
      redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
      return {granted, wait}
      """);

  /**
   * Gives back permits that {@link #TOKEN_BUCKET} granted to a caller who had stopped waiting for its answer.
   * KEYS[1]: the bucket; ARGV: burst, permits. A missing key is a full bucket already.
   */
  public static final LuaScript TOKEN_REFUND = new LuaScript("token-refund", """
      local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens'))
      if tokens == nil then
        return 0
      end
      redis.call('HSET', KEYS[1], 'tokens', tostring(math.min(tonumber(ARGV[1]), tokens + tonumber(ARGV[2]))))
      return 1
      """);

  /** Compare-and-delete: KEYS[1] is deleted only while it holds ARGV[1] (the owner's token); returns 1 if it was. */
  public static final LuaScript LOCK_RELEASE = new LuaScript("lock-release", """
      if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('DEL', KEYS[1])
      end
      return 0
      """);

  /** Compare-and-expire: KEYS[1] gets a lease of ARGV[2] ms only while it holds ARGV[1]; returns 1 if it did. */
  public static final LuaScript LOCK_RENEW = new LuaScript("lock-renew", """
      if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('PEXPIRE', KEYS[1], ARGV[2])
      end
      return 0
      """);

  private Scripts() {}
}
