package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.PermitGrant;
import ordertimeout.bus.PermitRequest;
import ordertimeout.config.AppConfig.ApiKey;
import ordertimeout.config.AppConfig;
import ordertimeout.limit.LimiterVerticle;
import ordertimeout.limit.TokenBucket;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.CloseReason;
import ordertimeout.order.CreateOutcome;
import ordertimeout.order.CreateRequest;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.NewOrder;
import ordertimeout.order.Order;
import ordertimeout.order.OrderIds;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderStatus;
import ordertimeout.order.PayRequest;
import ordertimeout.order.StateChange;
import ordertimeout.order.TimeoutPolicy;
import ordertimeout.store.OrderStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import static net.logstash.logback.argument.StructuredArguments.kv;

/**
 * The order routes: create (idempotent), read, pay, payment started, extend, cancel, and the admin close. A create is logged by
 * its access line (201 with the order id); a payment or a close on request by an INFO line of its own.
 */
final class OrderRoutes {
  private static final Logger log = LoggerFactory.getLogger(OrderRoutes.class);

  private final Vertx vertx;
  private final AppConfig config;
  private final OrderStore store;
  private final GroupCommit<CreateRequest, CreateOutcome> creates;
  private final GroupCommit<PayRequest, StateChange> pays;
  private final TimeoutPolicy policy;
  private final LongSupplier newOrderId;
  private final NodeStats stats;
  /** Per client, the lookups of a refused create's key ({@link #storedOrRateLimited}); this event loop's only. */
  private final Map<String, TokenBucket> keyLookups = new HashMap<>();

  OrderRoutes(Vertx vertx, AppConfig config, OrderStore store, GroupCommit<CreateRequest, CreateOutcome> creates,
              GroupCommit<PayRequest, StateChange> pays, LongSupplier newOrderId, NodeStats stats) {
    this.vertx = vertx;
    this.config = config;
    this.store = store;
    this.creates = creates;
    this.pays = pays;
    this.policy = new TimeoutPolicy(config.orders());
    this.newOrderId = newOrderId;
    this.stats = stats;
  }

  void mount(Router router, ContractChecks contract) {
    router.post("/v1/orders").handler(contract.validate("createOrder")).handler(this::create);
    router.get("/v1/orders/:id").handler(contract.validate("getOrder"))
        .handler(ctx -> store.findJson(orderId(ctx), clientScope(ctx))
            .onSuccess(body -> json(ctx, 200, body))
            .onFailure(ctx::fail));
    router.post("/v1/orders/:id/pay").handler(contract.validate("payOrder")).handler(this::pay);
    router.post("/v1/orders/:id/payment-started").handler(contract.validate("startPayment")).handler(this::paymentStarted);
    router.post("/v1/orders/:id/extend").handler(contract.validate("extendOrder")).handler(this::extend);
    router.post("/v1/orders/:id/cancel").handler(contract.validate("cancelOrder"))
        .handler(ctx -> close(ctx, CloseReason.USER_CANCELLED));
    router.post("/v1/admin/orders/:id/close").handler(contract.validate("closeOrder"))
        .handler(ctx -> close(ctx, CloseReason.ADMIN));
  }

  private void create(RoutingContext ctx) {
    long decideBy = decideBy();
    ApiKey caller = Auth.caller(ctx);
    String key = (String) ContractChecks.parameter(ctx, "Idempotency-Key");
    CreateOrderRequest request = CreateOrderRequest.of(ContractChecks.body(ctx), policy);
    AppConfig.ClientLimits limits = config.clients().of(caller.client());
    int timeoutSeconds = policy.timeoutSeconds(request.category(), request.timeoutSeconds());
    if (timeoutSeconds > limits.maxTimeoutSeconds()) {
      throw ApiException.badRequest("client_timeout_ceiling", "this client may ask for a timeout of at most "
          + limits.maxTimeoutSeconds() + " s, not " + timeoutSeconds);
    }
    long id = newOrderId.getAsLong();
    NewOrder order = new NewOrder(id, OrderIds.shardOf(id, config.database().shards()), request.userId(),
        request.category(), request.items(), timeoutSeconds, policy.reminderAfterSeconds(timeoutSeconds));
    IdempotencyKey idempotency = new IdempotencyKey(caller.client(), key, request.hash());
    long cacheTicket = store.createTicket(id);
    createPermit(caller.client(), limits)
        .compose(grant -> grant == null || grant.granted() > 0
            ? creates.submit(new CreateRequest(order, idempotency, decideBy), decideBy)
            : storedOrRateLimited(ctx, idempotency, limits, grant))
        .onSuccess(outcome -> {
          AccessLog.orderId(ctx, outcome.order().id());
          if (outcome.replay()) {
            stats.idempotentReplay();
            rescheduleReplayed(outcome.order());
          } else {
            stats.orderCreated();
            store.created(id, cacheTicket, caller.client(), outcome.order());
            schedule(outcome.order());
          }
          json(ctx, 201, outcome.order().toJson());
        })
        .onFailure(ctx::fail);
  }

  /** Takes a permit from the client's create bucket: granted 0 when it is empty; null when the client has none. */
  private Future<PermitGrant> createPermit(String client, AppConfig.ClientLimits limits) {
    if (limits.createsPerSecond() <= 0) {
      return Future.succeededFuture();
    }
    return vertx.eventBus()
        .<PermitGrant>request(Addresses.LIMITER_ACQUIRE, new PermitRequest(LimiterVerticle.CREATES_PREFIX + client, 1))
        .map(Message::body);
  }

  /**
   * A create its client's bucket refused: the retry of a create that committed (its key stored, for the same body)
   * gets its order again, as with a permit, so that a client retrying after an unknown outcome learns it; anything
   * else 429 with Retry-After, or 503 when the limiter could not reach the bucket (the client is not over its rate).
   * A key stored for another body is 422 as always. The keys are looked up at the client's
   * create rate and burst at most (a bucket of this event loop's), so that a client far over its rate does not turn
   * each refused create into a read of the database.
   */
  private Future<CreateOutcome> storedOrRateLimited(RoutingContext ctx, IdempotencyKey key,
                                                    AppConfig.ClientLimits limits, PermitGrant refused) {
    TokenBucket lookups = keyLookups.computeIfAbsent(key.client(),
        client -> new TokenBucket(limits.createsPerSecond(), limits.createsBurst(), System.nanoTime()));
    Future<CreateOutcome> stored = lookups.take(1, System.nanoTime()) == 1
        ? store.storedCreate(key).recover(failure ->
            failure instanceof OrderRejected ? Future.failedFuture(failure) : Future.succeededFuture())
        : Future.succeededFuture();
    return stored
        .map(found -> {
          if (found != null) {
            return found;
          }
          long seconds = Math.max(1, (refused.retryAfterMillis() + 999) / 1000);
          ctx.response().putHeader("Retry-After", Long.toString(seconds));
          if (refused.limiterUnavailable()) {
            stats.requestShed(ProblemCodes.RATE_LIMITER_UNAVAILABLE);
            throw new ApiException(503, ProblemCodes.RATE_LIMITER_UNAVAILABLE, "the rate limiter cannot be reached, "
                + "so creates are refused (redis.whenUnreachable=deny); nothing was stored, retry after " + seconds
                + " s");
          }
          stats.rateLimited();
          throw new ApiException(429, "rate_limited",
              "too many creates for this client; retry after " + seconds + " s");
        });
  }

  private void schedule(Order order) {
    long remindAt = order.remindAt() == null ? Deadlines.NONE : order.remindAt().toEpochMilli();
    vertx.eventBus().send(Addresses.TIMER_SCHEDULE, Deadlines.one(order.id(), order.closeAt().toEpochMilli(), remindAt));
  }

  /**
   * The timers of an unpaid order whose create is sent again, put (back) on its shard's owner: the node that made it
   * may have died between its commit and sending them, and the owner, alive all along, reloads nothing (NodeKillTest
   * saw the sweep close such an order a minute late). Replacing, so an owner that has them keeps one of each.
   */
  private void rescheduleReplayed(Order order) {
    if (order.status() == OrderStatus.UNPAID) {
      moveTimers(order, true);
    }
  }

  /** The {@link System#nanoTime()} by which a request arriving now must have been started (and a create decided). */
  private long decideBy() {
    return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.intake().requestDeadlineMillis());
  }

  /**
   * A pay that ran out of its lock wait is tried again until two lock waits before its answer deadline: time for one
   * more try and its answer, not for a queue of tries past that deadline.
   */
  private long retryPayUntil() {
    long millis = config.intake().answerWithinMillis() - 2L * config.database().intake().lockTimeoutMillis();
    return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(config.intake().requestDeadlineMillis(), millis));
  }

  private void pay(RoutingContext ctx) {
    long decideBy = decideBy();
    respond(ctx, 200, pays.submit(new PayRequest(orderId(ctx), clientScope(ctx), retryPayUntil()), decideBy).map(change -> {
      cancelTimersIfChanged(change);
      if (change.changed()) {
        log.info("order paid {} {}", kv("orderId", change.order().id()), kv("requestId", AccessLog.requestId(ctx)));
      }
      if (change.order().status() == OrderStatus.CLOSED) {
        throw new OrderRejected(Reason.ORDER_CLOSED, "order " + change.order().id() + " is closed ("
            + change.order().closeReason() + ") and cannot be paid");
      }
      return change.order();
    }));
  }

  /**
   * The buyer reached the payment provider: the close waits {@code orders.paymentHoldSeconds} past the deadline, once
   * per order; the order's close timer moves to its hold on the owner of its shard.
   */
  private void paymentStarted(RoutingContext ctx) {
    long id = orderId(ctx);
    respond(ctx, 200, store.paymentStarted(id, clientScope(ctx), config.orders().paymentHoldSeconds()).map(change -> {
      Order order = change.order();
      if (change.changed() && order.status() == OrderStatus.UNPAID) {
        moveTimers(order, false);
        log.info("payment started {} {} {}", kv("orderId", id), kv("holdUntil", order.holdUntil()),
            kv("requestId", AccessLog.requestId(ctx)));
      }
      if (order.status() != OrderStatus.UNPAID) {
        cancelTimersIfChanged(change); // closed here: it was past its deadline
      }
      return unpaid(order);
    }));
  }

  /**
   * A new deadline, {@code closeAt} or {@code extendSeconds} past the time the order would close now (its deadline,
   * or the end of a payment's hold, which then ends), within the caller's ceiling after the order's creation (the
   * client's {@code clients.*.maxTimeoutSeconds}; for an admin {@code orders.maxTimeoutSeconds}); the order's timers
   * move on the owner of its shard.
   */
  private void extend(RoutingContext ctx) {
    long id = orderId(ctx);
    JsonObject body = (JsonObject) ContractChecks.body(ctx);
    ApiKey caller = Auth.caller(ctx);
    long ceiling = caller.role() == AppConfig.Role.ADMIN
        ? config.orders().maxTimeoutSeconds()
        : config.clients().of(caller.client()).maxTimeoutSeconds();
    Instant closeAt = body.containsKey("closeAt") ? instant(body.getString("closeAt")) : null;
    long extendSeconds = body.getLong("extendSeconds", 0L);
    respond(ctx, 200, store.extend(id, clientScope(ctx), closeAt, extendSeconds, ceiling).map(change -> {
      Order order = change.order();
      if (change.changed() && order.status() == OrderStatus.UNPAID) {
        moveTimers(order, true);
        log.info("deadline extended {} {} {}", kv("orderId", id), kv("closeAt", order.closeAt()),
            kv("requestId", AccessLog.requestId(ctx)));
      }
      if (order.status() != OrderStatus.UNPAID) {
        cancelTimersIfChanged(change); // closed here: it was past its deadline
      }
      return unpaid(order);
    }));
  }

  /** An ISO-8601 time with its offset ({@code Z} or {@code +02:00}); 400 {@code invalid_field} otherwise. */
  private static Instant instant(String text) {
    try {
      return OffsetDateTime.parse(text, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
    } catch (DateTimeParseException e) {
      throw ApiException.badRequest(ProblemCodes.INVALID_FIELD, "'closeAt' must be an ISO-8601 time with its offset, e.g. "
          + "2026-12-01T09:30:00Z");
    }
  }

  /** The order's close timer to its due time (deadline or hold), and its reminder with it if {@code reminder}. */
  private void moveTimers(Order order, boolean reminder) {
    long remindAt = reminder && order.remindAt() != null ? order.remindAt().toEpochMilli() : Deadlines.NONE;
    vertx.eventBus().send(Addresses.TIMER_MOVE, Deadlines.one(order.id(), order.dueAt().toEpochMilli(), remindAt));
  }

  /** The order if it is unpaid; 409 {@code order_paid} or {@code order_closed} otherwise. */
  private static Order unpaid(Order order) {
    if (order.status() == OrderStatus.PAID) {
      throw new OrderRejected(Reason.ORDER_PAID, "order " + order.id() + " is paid");
    }
    if (order.status() == OrderStatus.CLOSED) {
      throw new OrderRejected(Reason.ORDER_CLOSED, "order " + order.id() + " is closed (" + order.closeReason() + ")");
    }
    return order;
  }

  private void close(RoutingContext ctx, CloseReason reason) {
    respond(ctx, 200, store.closeOnRequest(orderId(ctx), reason, clientScope(ctx)).map(change -> {
      cancelTimersIfChanged(change);
      if (change.changed()) {
        stats.closedOnRequest(reason);
        log.info("order closed {} {} {}", kv("orderId", change.order().id()), kv("reason", reason),
            kv("requestId", AccessLog.requestId(ctx)));
      }
      if (change.order().status() == OrderStatus.PAID) {
        throw new OrderRejected(Reason.ORDER_PAID, "order " + change.order().id() + " is paid and cannot be closed");
      }
      return change.order();
    }));
  }

  private void cancelTimersIfChanged(StateChange change) {
    if (change.changed()) {
      vertx.eventBus().send(Addresses.TIMER_CANCEL, CancelTimers.one(change.order().id()));
    }
  }

  /** A client sees its own orders only; an admin sees all (null). */
  private static String clientScope(RoutingContext ctx) {
    ApiKey caller = Auth.caller(ctx);
    return caller.role() == AppConfig.Role.ADMIN ? null : caller.client();
  }

  /**
   * The {@code :id} path parameter, whose digits the contract checked: 400 {@code invalid_order_id} when they
   * do not fit in 64 bits, which its pattern does not say.
   */
  static long orderId(RoutingContext ctx) {
    long id = ApiException.idOf((String) ContractChecks.parameter(ctx, "id"), "invalid_order_id",
        "an order id is a 64-bit number");
    AccessLog.orderId(ctx, id);
    return id;
  }

  static void respond(RoutingContext ctx, int status, Future<Order> order) {
    order.onSuccess(found -> json(ctx, status, found.toJson())).onFailure(ctx::fail);
  }

  static void json(RoutingContext ctx, int status, JsonObject body) {
    json(ctx, status, body.encode());
  }

  static void json(RoutingContext ctx, int status, JsonArray body) {
    json(ctx, status, body.encode());
  }

  /** Nothing is written once {@link AnswerDeadline} answered the request. */
  private static void json(RoutingContext ctx, int status, String body) {
    if (!ctx.response().ended()) {
      ctx.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(body);
    }
  }
}
