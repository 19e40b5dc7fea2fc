package ordertimeout.redis;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * A Lua script run by its SHA-1 (EVALSHA: the text is not sent every time). Redis forgets its scripts
 * when it restarts: on NOSCRIPT the script is sent once with EVAL, which loads it again.
 */
public record LuaScript(String name, String source, String sha1) {

  public LuaScript(String name, String source) {
    this(name, source, sha1Of(source));
  }

  public Future<Response> run(Redis redis, List<String> keys, List<String> args) {
    return redis.send(request(Command.EVALSHA, sha1, keys, args)).recover(failure -> {
      String message = failure.getMessage();
      return message != null && message.startsWith("NOSCRIPT")
          ? redis.send(request(Command.EVAL, source, keys, args))
          : Future.failedFuture(failure);
    });
  }

  private static Request request(Command command, String script, List<String> keys, List<String> args) {
    Request request = Request.cmd(command).arg(script).arg(keys.size());
    keys.forEach(request::arg);
    args.forEach(request::arg);
    return request;
  }

  private static String sha1Of(String source) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(source.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
