package ordertimeout.delivery;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.config.AppConfig;
import ordertimeout.config.Secrets;
import ordertimeout.metrics.NodeStats;
import ordertimeout.store.EventStore;
import ordertimeout.store.EventStore.Due;
import ordertimeout.timer.OwnedShards;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Sends the webhook deliveries of the shards this node owns (all of them on a node alone): each event POSTed as
 * {@code {"type","timestamp","data"}} with the Standard Webhooks headers ({@link WebhookSignature}); a 2xx answer
 * delivers it, anything else (or no answer within {@code events.timeoutMillis}) is tried again after an exponential
 * backoff with jitter, for {@code events.retrySeconds} after the first attempt, then the delivery is marked FAILED.
 * One order's events go to a webhook one after another: a later one waits while an earlier one is pending. At most
 * {@code events.maxInFlight} requests at once. A node that lost a shard and has not noticed may send a delivery
 * again: receivers de-duplicate by {@code webhook-id} (the event id). A delivery whose new state the database refused
 * to write is sent again too, but not before the backoff it would have had.
 */
public final class WebhookVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(WebhookVerticle.class);
  private static final int MAX_ERROR_CHARS = 500;
  private static final int DELIVERED_BATCH = 256;
  private static final long DELIVERED_FLUSH_MILLIS = 5;

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final OwnedShards owned;
  private final Map<String, AppConfig.Webhook> webhooks = new HashMap<>();
  /** Requests in flight: each delivery's id and its webhook's url. */
  private final Map<Long, String> inFlight = new HashMap<>();
  /** Where each webhook's next read of its due deliveries starts walking. */
  private final Map<String, DueCursor> cursors = new HashMap<>();
  /** Webhooks whose last attempt failed: one WARN when one starts failing, one INFO when it answers again. */
  private final Set<String> failing = new HashSet<>();
  private final Map<Long, Promise<Void>> deliveredMarks = new HashMap<>();
  /**
   * Deliveries whose state the database refused to write (a lock or statement timeout, a standby after a failover):
   * their next_attempt_at did not move, so every poll would take them again at once. They are left out of the polls
   * until the backoff of a written attempt would have let them go, each refused write counting as one more attempt.
   */
  private final Map<Long, Unwritten> unwritten = new HashMap<>();
  private long deliveredFlush = -1;
  private boolean writingMarks;
  private EventStore store;
  private HttpClient client;
  private long timer = -1;
  private boolean polling;
  private boolean stopped;

  public WebhookVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, OwnedShards owned) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.owned = owned;
    config.events().webhooks().forEach(webhook -> webhooks.put(webhook.url(), webhook));
    webhooks.keySet().forEach(sink -> cursors.put(sink, new DueCursor(System.nanoTime())));
  }

  @Override
  public Future<?> start() {
    AppConfig.Events events = config.events();
    store = EventStore.shared(vertx, connectOptions, config.database().background());
    // a connection for each request any webhook may have in flight: webhooks on one host share its connections
    client = vertx.createHttpClient(
        new HttpClientOptions().setConnectTimeout(events.timeoutMillis()).setKeepAlive(true),
        new PoolOptions().setHttp1MaxSize(events.maxInFlight() * Math.max(1, webhooks.size())));
    later(0);
    return Future.succeededFuture();
  }

  /** The requests in flight get their answer or their timeout and their state written, then the client closes. */
  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(timer);
    Promise<Void> idle = Promise.promise();
    whenIdle(idle);
    return idle.future().timeout(config.events().timeoutMillis() + 1000L, TimeUnit.MILLISECONDS)
        .otherwiseEmpty()
        .compose(none -> client.close());
  }

  private void whenIdle(Promise<Void> idle) {
    if (inFlight.isEmpty() && !polling) {
      idle.tryComplete();
    } else {
      vertx.setTimer(50, id -> whenIdle(idle));
    }
  }

  private void later(long delayMillis) {
    if (!stopped) {
      vertx.cancelTimer(timer);
      timer = vertx.setTimer(Math.max(1, delayMillis), id -> poll());
    }
  }

  /**
   * Takes as many due deliveries as each webhook has room for ({@code events.maxInFlight} each, so that a slow webhook
   * holds back only its own); a full take looks again at once (the answers to what it sent poll again). Only the
   * webhooks configured here are read, so whatever is taken is sent. Each webhook's read walks its pending deliveries
   * from its {@link DueCursor}, a bounded number of them.
   */
  private void poll() {
    Map<String, Integer> bySink = new HashMap<>();
    inFlight.values().forEach(sink -> bySink.merge(sink, 1, Integer::sum));
    // A held delivery takes its place as one in flight does: with the database refusing every state write, a webhook
    // is sent at most events.maxInFlight deliveries again and again, not the whole backlog one after another.
    long polledAt = System.nanoTime();
    unwritten.values().forEach(held -> {
      if (held.heldUntilNanos() - polledAt > 0) {
        bySink.merge(held.sink(), 1, Integer::sum);
      }
    });
    List<String> sinks = new ArrayList<>();
    List<Integer> rooms = new ArrayList<>();
    webhooks.keySet().forEach(sink -> {
      int left = config.events().maxInFlight() - bySink.getOrDefault(sink, 0);
      if (left > 0) {
        sinks.add(sink);
        rooms.add(left);
      }
    });
    int room = rooms.stream().mapToInt(Integer::intValue).sum();
    int[] shards = owned.list();
    if (stopped || polling) {
      return;
    }
    if (room <= 0) {
      if (inFlight.isEmpty()) { // all held: no answer will poll again
        later(config.events().dispatchIntervalMillis());
      }
      return;
    }
    if (shards.length == 0) {
      later(config.events().dispatchIntervalMillis());
      return;
    }
    polling = true;
    Long[] after = sinks.stream().map(sink -> cursors.get(sink).after()).toArray(Long[]::new);
    store.due(shards, notToTake(), sinks.toArray(String[]::new), rooms.toArray(Integer[]::new), after)
        .onComplete(taken -> {
          polling = false;
          if (taken.failed()) {
            log.warn("could not read the webhook deliveries due: {}", taken.cause().toString());
            later(Math.max(1000, config.events().dispatchIntervalMillis()));
            return;
          }
          long now = System.nanoTime();
          for (int i = 0; i < sinks.size(); i++) {
            cursors.get(sinks.get(i)).walked(taken.result().walks().get(sinks.get(i)), rooms.get(i), now);
          }
          List<Due> due = stopped ? List.of() : taken.result().due();
          due.forEach(this::send);
          if (due.size() < room) {
            later(config.events().dispatchIntervalMillis());
          }
        });
  }

  private void send(Due due) {
    AppConfig.Webhook webhook = webhooks.get(due.sink());
    inFlight.put(due.id(), due.sink());
    String id = Long.toString(due.event().id());
    long timestamp = Instant.now().getEpochSecond();
    String body = new JsonObject()
        .put("type", due.event().type())
        .put("timestamp", due.event().at().toString())
        .put("data", new JsonObject(due.event().payload()))
        .encode();
    int timeoutMillis = config.events().timeoutMillis();
    RequestOptions request = new RequestOptions()
        .setMethod(HttpMethod.POST)
        .setAbsoluteURI(webhook.url())
        .setConnectTimeout(timeoutMillis)
        .setIdleTimeout(timeoutMillis)
        .putHeader("content-type", "application/json")
        .putHeader(WebhookSignature.ID, id)
        .putHeader(WebhookSignature.TIMESTAMP, Long.toString(timestamp))
        .putHeader(WebhookSignature.SIGNATURE, WebhookSignature.sign(webhook.secret(), id, timestamp, body));
    // The whole answer must arrive within the timeout (a 2xx whose body is still coming then counts as failed). A
    // receiver that sends it a byte at a time never lets the connection idle out: past the timeout the request is
    // reset, which closes its connection, or each attempt would keep one until the receiver stops. The body is read
    // but not kept, so a long one costs no memory.
    HttpClientRequest[] sending = new HttpClientRequest[1];
    client.request(request)
        .compose(sent -> {
          sending[0] = sent;
          return sent.send(body);
        })
        .compose(response -> response.end().map(ignored -> response.statusCode()))
        .timeout(timeoutMillis, TimeUnit.MILLISECONDS)
        .onFailure(e -> {
          if (sending[0] != null) {
            sending[0].reset();
          }
        })
        .transform(answered -> answered.succeeded() && answered.result() / 100 == 2
            ? delivered(due, webhook)
            : failed(due, webhook, answered.succeeded() ? "HTTP " + answered.result() : String.valueOf(answered.cause())))
        .onComplete(written -> {
          if (written.failed()) {
            log.warn("could not write the state of webhook delivery {}: {}; it is sent again in {} ms at the earliest",
                due.id(), written.cause().toString(), holdUnwritten(due));
          } else {
            unwritten.remove(due.id());
          }
          inFlight.remove(due.id());
          later(0);
        });
  }

  /** How many writes of a delivery's state were refused in a row, and until when (System.nanoTime) it is held. */
  private record Unwritten(String sink, int refusedWrites, long heldUntilNanos) {}

  /** Holds a delivery whose state write was refused for the backoff of its next attempt; answers that backoff. */
  private long holdUnwritten(Due due) {
    Unwritten before = unwritten.get(due.id());
    int refusedBefore = before == null ? 0 : before.refusedWrites();
    long holdMillis = backoffMillis(due.attempts() + refusedBefore);
    long heldUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(holdMillis);
    unwritten.put(due.id(), new Unwritten(due.sink(), refusedBefore + 1, heldUntil));
    return holdMillis;
  }

  /**
   * The deliveries a poll must not take: those in flight and those held after a refused write. A hold that ended
   * longer than the longest backoff ago without its delivery being taken again (its shard moved, its event deleted)
   * is forgotten.
   */
  private Long[] notToTake() {
    long now = System.nanoTime();
    long forgetAfterNanos = TimeUnit.MILLISECONDS.toNanos(config.events().backoffMaxMillis());
    unwritten.entrySet().removeIf(held ->
        !inFlight.containsKey(held.getKey()) && now - held.getValue().heldUntilNanos() > forgetAfterNanos);
    List<Long> ids = new ArrayList<>(inFlight.keySet());
    unwritten.forEach((id, held) -> {
      if (held.heldUntilNanos() - now > 0) {
        ids.add(id);
      }
    });
    return ids.toArray(Long[]::new);
  }

  private Future<Void> delivered(Due due, AppConfig.Webhook webhook) {
    stats.webhookAttempt("delivered", 1);
    if (failing.remove(webhook.url())) {
      log.info("webhook {} answers again", webhook);
    }
    return markDelivered(due.id());
  }

  /**
   * Delivered marks are written together: one statement for those answered within {@value #DELIVERED_FLUSH_MILLIS} ms of
   * each other (or {@value #DELIVERED_BATCH} of them), not one transaction per answer. A delivery stays in flight, so
   * that no read of the due deliveries takes it again, until its mark is written.
   */
  private Future<Void> markDelivered(long id) {
    Promise<Void> written = Promise.promise();
    deliveredMarks.put(id, written);
    if (deliveredMarks.size() >= DELIVERED_BATCH) {
      writeDeliveredMarks();
    } else if (deliveredFlush == -1) {
      deliveredFlush = vertx.setTimer(DELIVERED_FLUSH_MILLIS, timerId -> {
        deliveredFlush = -1;
        writeDeliveredMarks();
      });
    }
    return written.future();
  }

  private void writeDeliveredMarks() {
    if (writingMarks || deliveredMarks.isEmpty()) {
      return;
    }
    writingMarks = true;
    Map<Long, Promise<Void>> marks = new HashMap<>(deliveredMarks);
    deliveredMarks.clear();
    store.delivered(List.copyOf(marks.keySet())).onComplete(written -> {
      writingMarks = false;
      marks.values().forEach(mark -> mark.handle(written));
      if (deliveredMarks.size() >= DELIVERED_BATCH || (!deliveredMarks.isEmpty() && deliveredFlush == -1)) {
        writeDeliveredMarks();
      }
    });
  }

  private Future<Void> failed(Due due, AppConfig.Webhook webhook, String error) {
    String shortError = Secrets.withoutPasswords(error.length() > MAX_ERROR_CHARS ? error.substring(0, MAX_ERROR_CHARS) : error);
    if (failing.add(webhook.url())) {
      log.warn("webhook {} failed ({}); its deliveries are retried with backoff for up to {} s", webhook, shortError,
          config.events().retrySeconds());
    }
    return store.failed(due.id(), shortError, backoffMillis(due.attempts()), config.events().retrySeconds())
        .map(status -> {
          if (status == EventStore.Status.FAILED) {
            stats.webhookAttempt("failed", 1);
            log.warn("webhook delivery {} (event {}, order {}) to {} failed for good after {} attempts: {}", due.id(),
                due.event().id(), due.event().orderId(), webhook, due.attempts() + 1, shortError);
          } else if (status == EventStore.Status.PENDING) {
            stats.webhookAttempt("retried", 1);
          }
          return null;
        });
  }

  /** After {@code attempts} earlier attempts: min * 2^attempts, capped at max, then between half of it and all of it. */
  private long backoffMillis(int attempts) {
    AppConfig.Events events = config.events();
    long delay = events.backoffMaxMillis();
    if (attempts < 40) {
      delay = Math.min(events.backoffMaxMillis(), events.backoffMinMillis() * (1L << Math.min(attempts, 30)));
    }
    return delay / 2 + ThreadLocalRandom.current().nextLong(delay / 2 + 1);
  }
}
