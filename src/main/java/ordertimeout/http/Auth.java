package ordertimeout.http;

import io.vertx.ext.web.RoutingContext;
import ordertimeout.config.AppConfig.ApiKey;
import ordertimeout.config.AppConfig.Role;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * Bearer API keys from configuration, each with a role and the client it belongs to. A presented key is
 * compared with every configured key in constant time, through SHA-256 digests (equal lengths, so that
 * neither the position of the first differing byte nor a key's length shows in the time taken).
 */
final class Auth {
  private static final String CALLER = "caller";
  private static final String BEARER = "Bearer ";

  private final List<KnownKey> keys;

  private record KnownKey(byte[] digest, ApiKey key) {}

  Auth(List<ApiKey> keys) {
    this.keys = keys.stream().map(key -> new KnownKey(sha256(key.key()), key)).toList();
  }

  /** Any valid key; 401 otherwise. */
  void authenticate(RoutingContext ctx) {
    String header = ctx.request().getHeader("Authorization");
    ApiKey key = isBearer(header) ? find(header.substring(BEARER.length()).trim()) : null;
    if (key == null) {
      ctx.response().putHeader("WWW-Authenticate", "Bearer");
      ctx.fail(new ApiException(401, "unauthorized", "a valid 'Authorization: Bearer <key>' header is required"));
      return;
    }
    ctx.put(CALLER, key);
    ctx.next();
  }

  /** RFC 9110 (11.1): the scheme is case-insensitive; {@code bearer <key>} is as good as {@code Bearer <key>}. */
  private static boolean isBearer(String header) {
    return header != null && header.regionMatches(true, 0, BEARER, 0, BEARER.length());
  }

  /** The configured key equal to {@code presented}, or null; every configured key is compared, whichever matches. */
  ApiKey find(String presented) {
    byte[] digest = sha256(presented);
    ApiKey found = null;
    for (KnownKey known : keys) {
      if (MessageDigest.isEqual(known.digest(), digest)) {
        found = known.key();
      }
    }
    return found;
  }

  private static byte[] sha256(String key) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  /** Admin keys only; 403 for user keys. Runs after {@link #authenticate}. */
  void requireAdmin(RoutingContext ctx) {
    if (caller(ctx).role() != Role.ADMIN) {
      ctx.fail(new ApiException(403, "forbidden", "this route needs an admin key"));
      return;
    }
    ctx.next();
  }

  static ApiKey caller(RoutingContext ctx) {
    return ctx.get(CALLER);
  }
}
