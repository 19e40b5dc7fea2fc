package ordertimeout.http;

import io.vertx.ext.web.RoutingContext;
import ordertimeout.config.AppConfig.ApiKey;
import ordertimeout.config.AppConfig.Role;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/** Bearer API keys from configuration, each with a role and the client it belongs to. */
final class Auth {
  private static final String CALLER = "caller";
  private static final String BEARER = "Bearer ";

  private final Map<String, ApiKey> keys;

  Auth(List<ApiKey> keys) {
    this.keys = keys.stream().collect(Collectors.toUnmodifiableMap(ApiKey::key, Function.identity()));
  }

  /** Any valid key; 401 otherwise. */
  void authenticate(RoutingContext ctx) {
    String header = ctx.request().getHeader("Authorization");
    ApiKey key = header != null && header.startsWith(BEARER) ? keys.get(header.substring(BEARER.length()).trim()) : null;
    if (key == null) {
      ctx.response().putHeader("WWW-Authenticate", "Bearer");
      ctx.fail(new ApiException(401, "unauthorized", "a valid 'Authorization: Bearer <key>' header is required"));
      return;
    }
    ctx.put(CALLER, key);
    ctx.next();
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
