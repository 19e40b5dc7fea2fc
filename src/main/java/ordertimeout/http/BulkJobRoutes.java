package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.bus.Addresses;
import ordertimeout.order.Digests;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.OrderFilter;
import ordertimeout.store.BulkJobStore;
import ordertimeout.store.BulkJobStore.Kind;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.stream.Collectors;

/**
 * Operators' bulk actions: POST /v1/admin/orders/bulk-close and bulk-extend, by ids or by a filter (the search's fields).
 * A dry run answers the counts at once; otherwise the job is stored and answered 202, and runs in batches on whichever
 * node claims it ({@link ordertimeout.maintenance.BulkJobVerticle}); GET /v1/admin/jobs/{id} shows its progress,
 * GET /v1/admin/jobs every job, newest first, in pages. With an Idempotency-Key the same request sent again answers
 * the same job rather than submitting another (an extend applied twice moves each deadline twice); a dry run neither
 * reads nor stores it.
 */
final class BulkJobRoutes {
  private final BulkJobStore jobs;

  BulkJobRoutes(BulkJobStore jobs) {
    this.jobs = jobs;
  }

  void mount(Router router, ContractChecks contract) {
    router.post("/v1/admin/orders/bulk-close").handler(contract.validate("bulkClose")).handler(ctx -> submit(ctx, Kind.BULK_CLOSE));
    router.post("/v1/admin/orders/bulk-extend").handler(contract.validate("bulkExtend")).handler(ctx -> submit(ctx, Kind.BULK_EXTEND));
    router.get("/v1/admin/jobs").handler(contract.validate("listJobs")).handler(this::list);
    router.get("/v1/admin/jobs/:id").handler(contract.validate("getJob")).handler(this::find);
  }

  private void submit(RoutingContext ctx, Kind kind) {
    JsonObject body = (JsonObject) ContractChecks.body(ctx);
    JsonArray idList = body.getJsonArray("ids");
    JsonObject filterJson = body.getJsonObject("filter");
    if ((idList == null) == (filterJson == null)) {
      throw ApiException.badRequest("ids_or_filter", "name the orders either by 'ids' or by 'filter', one of the two");
    }
    Long[] ids = idList == null ? null : ids(idList);
    OrderFilter filter = filterJson == null ? null : SearchRoutes.filter(filterJson::getString);
    if (filter != null && filter.isEmpty()) {
      throw ApiException.badRequest("empty_filter", "a bulk action's filter needs at least one field (it would match every order)");
    }
    Integer extendSeconds = body.getInteger("extendSeconds");
    if (body.getBoolean("dryRun", false)) {
      jobs.count(ids, filter).onSuccess(counts -> OrderRoutes.json(ctx, 200, new JsonObject()
              .put("dryRun", true).put("kind", kind.name()).put("matched", counts.matched()).put("unpaid", counts.unpaid())))
          .onFailure(ctx::fail);
      return;
    }
    String client = Auth.caller(ctx).client();
    String key = (String) ContractChecks.parameter(ctx, "Idempotency-Key");
    IdempotencyKey idempotency = key == null ? null
        : new IdempotencyKey(client, key, requestHash(kind, ids, filter, extendSeconds));
    jobs.submit(kind, client, ids, filter, extendSeconds, idempotency).onSuccess(job -> {
      ctx.vertx().eventBus().send(Addresses.BULK_JOBS_WAKE, null);
      ctx.response().putHeader("Location", "/v1/admin/jobs/" + job.getString("id"));
      OrderRoutes.json(ctx, 202, job);
    }).onFailure(ctx::fail);
  }

  /** What tells a retry from another request under the same key: the action, the orders it names, its change. */
  private static String requestHash(Kind kind, Long[] ids, OrderFilter filter, Integer extendSeconds) {
    String orders = ids != null
        ? "ids:" + Arrays.stream(ids).distinct().sorted().map(String::valueOf).collect(Collectors.joining(","))
        : "filter:" + filter.toJson().encode();
    return HexFormat.of().formatHex(Digests.sha256(kind.name(), orders, String.valueOf(extendSeconds)));
  }

  /** The ids the contract checked as digits; 400 {@code invalid_order_id} for one beyond 64 bits. */
  private static Long[] ids(JsonArray list) {
    Long[] ids = new Long[list.size()];
    for (int i = 0; i < ids.length; i++) {
      try {
        ids[i] = Long.parseLong(list.getString(i));
      } catch (NumberFormatException e) {
        throw ApiException.badRequest("invalid_order_id", "ids[" + i + "]: an order id is a 64-bit number");
      }
    }
    return ids;
  }

  /** A page of jobs, newest first; {@code next} is the cursor of the page after, null on the last. */
  private void list(RoutingContext ctx) {
    int limit = ((Number) ContractChecks.parameter(ctx, "limit")).intValue();
    Long below = KeysetCursor.JOBS.lastShown((String) ContractChecks.parameter(ctx, "cursor"));
    jobs.page(below, limit).onSuccess(page -> {
      JsonArray body = new JsonArray();
      page.items().forEach(job -> body.add(job.toJson()));
      String next = page.next() == null ? null : KeysetCursor.JOBS.of(page.next());
      OrderRoutes.json(ctx, 200, new JsonObject().put("jobs", body).put("next", next));
    }).onFailure(ctx::fail);
  }

  private void find(RoutingContext ctx) {
    long id = ApiException.idOf((String) ContractChecks.parameter(ctx, "id"), "invalid_job_id", "a job id is a 64-bit number");
    jobs.find(id).onSuccess(job -> {
      if (job.isEmpty()) {
        ctx.fail(new ApiException(404, "job_not_found", "no job " + id));
      } else {
        OrderRoutes.json(ctx, 200, job.get().toJson());
      }
    }).onFailure(ctx::fail);
  }
}
