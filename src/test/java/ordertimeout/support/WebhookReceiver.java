package ordertimeout.support;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A small HTTP server standing in for a shop's webhook endpoint: records every request it gets (path, the Standard
 * Webhooks headers, body, when it arrived and when it was answered) and answers each path with the status set for it
 * (204 unless told), after the delay set for the event type (none unless told).
 */
public final class WebhookReceiver implements AutoCloseable {
  public static final long TRICKLE_EVERY_MILLIS = 200;
  /** One request: {@code receivedNanos} and {@code answeredNanos} from System.nanoTime(). */
  public record Received(String path, String id, String timestamp, String signature, String body, int status,
                         long receivedNanos, long answeredNanos) {
    public JsonObject json() {
      return new JsonObject(body);
    }

    public String type() {
      return json().getString("type");
    }

    public String orderId() {
      return json().getJsonObject("data").getString("orderId");
    }
  }

  private final Vertx vertx = Vertx.vertx();
  private final HttpServer server;
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private final Map<String, Integer> statusByPath = new ConcurrentHashMap<>();
  private final Map<String, Long> delayByType = new ConcurrentHashMap<>();
  private final Map<String, Long> delayByPath = new ConcurrentHashMap<>();
  private final Map<String, Long> trickleByPath = new ConcurrentHashMap<>();

  public WebhookReceiver() {
    server = TestService.await(vertx.createHttpServer().requestHandler(request -> request.body().onSuccess(body -> {
      long at = System.nanoTime();
      String text = body.toString();
      String type = text.isEmpty() ? "" : new JsonObject(text).getString("type", "");
      int status = statusByPath.getOrDefault(request.path(), 204);
      long delay = Math.max(delayByType.getOrDefault(type, 0L), delayByPath.getOrDefault(request.path(), 0L));
      Long trickle = trickleByPath.get(request.path());
      if (trickle != null) {
        received.add(new Received(request.path(), request.getHeader("webhook-id"),
            request.getHeader("webhook-timestamp"), request.getHeader("webhook-signature"), text, 200, at, at));
        request.response().setChunked(true).setStatusCode(200);
        long end = at + trickle * 1_000_000;
        vertx.setPeriodic(TRICKLE_EVERY_MILLIS, timer -> {
          if (request.response().closed()) {
            vertx.cancelTimer(timer);
          } else if (System.nanoTime() - end > 0) {
            vertx.cancelTimer(timer);
            request.response().end();
          } else {
            request.response().write(".");
          }
        });
        return;
      }
      Runnable answer = () -> {
        received.add(new Received(request.path(), request.getHeader("webhook-id"), request.getHeader("webhook-timestamp"),
            request.getHeader("webhook-signature"), text, status, at, System.nanoTime()));
        request.response().setStatusCode(status).end();
      };
      if (delay > 0) {
        vertx.setTimer(delay, id -> answer.run());
      } else {
        answer.run();
      }
    })).listen(0, "127.0.0.1"));
  }

  public String url(String path) {
    return "http://127.0.0.1:" + server.actualPort() + path;
  }

  public void answer(String path, int status) {
    statusByPath.put(path, status);
  }

  public void delay(String type, long millis) {
    delayByType.put(type, millis);
  }

  /**
   * Every request at {@code path} is answered 200 at once, and its body sent a byte every {@link #TRICKLE_EVERY_MILLIS}
   * for {@code millis} (or until the client closes the connection): an answer that never idles. Recorded on arrival.
   */
  public void tricklePath(String path, long millis) {
    trickleByPath.put(path, millis);
  }

  /** Every request at {@code path} is answered {@code millis} after it arrived. */
  public void delayPath(String path, long millis) {
    delayByPath.put(path, millis);
  }

  public List<Received> received(String path) {
    return received.stream().filter(r -> r.path().equals(path)).toList();
  }

  public void clear() {
    received.clear();
    statusByPath.clear();
    delayByType.clear();
    delayByPath.clear();
    trickleByPath.clear();
  }

  @Override
  public void close() {
    TestService.await(vertx.close());
  }
}
