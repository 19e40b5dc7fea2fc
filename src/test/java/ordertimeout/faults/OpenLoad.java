package ordertimeout.faults;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import ordertimeout.faults.LoadPlan.PlannedCreate;
import ordertimeout.faults.Recording.Kind;
import ordertimeout.faults.Recording.Operation;
import ordertimeout.faults.Recording.Outcome;
import ordertimeout.support.Api;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * Runs a {@link LoadPlan} as an open model: each operation is sent when it is due, whatever the ones before it are
 * doing, and its wait is measured from that due time. A client that gets no trustworthy answer (a timeout, a lost
 * connection, a 5xx other than 503) sends the same request again to the next node, creates with the same
 * idempotency key, up to {@link #ATTEMPTS} requests; {@code request_in_progress} (the key's first request still
 * running) is asked again a little later. Creates go to node {@code index mod n}, their pay to the next, their read
 * to the one after.
 */
final class OpenLoad {
  /** Past the nodes' answer bound (intake.answerWithinMillis, 10 s), so that a node that answers at all is heard. */
  static final Duration CLIENT_TIMEOUT = Duration.ofSeconds(12);
  private static final int ATTEMPTS = 3;
  private static final int IN_PROGRESS_ATTEMPTS = 20;
  private static final long RETRY_DELAY_MILLIS = 250;
  /** Requests in flight at once at most (file descriptors): one past it is sent when another ends, its wait counting. */
  private static final int MAX_IN_FLIGHT = 2_000;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private final Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);

  /** Runs the plan against the nodes whose HTTP port {@code ports} gives (read at each request), and waits for every operation's end. */
  Recording run(LoadPlan plan, IntFunction<Integer> ports, int nodes) {
    Recording recording = new Recording();
    ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(runnable -> new Thread(runnable, "open-load"));
    Pending pending = new Pending();
    long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
    Run run = new Run(recording, scheduler, pending, ports, nodes);
    for (PlannedCreate create : plan.creates()) {
      pending.add();
      long dueNanos = start + TimeUnit.MILLISECONDS.toNanos(create.dueMillis());
      scheduler.schedule(() -> run.create(create, dueNanos, start), dueNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
    }
    pending.awaitNone();
    scheduler.shutdownNow();
    return recording;
  }

  private final class Run {
    private final Recording recording;
    private final ScheduledExecutorService scheduler;
    private final Pending pending;
    private final IntFunction<Integer> ports;
    private final int nodes;

    Run(Recording recording, ScheduledExecutorService scheduler, Pending pending, IntFunction<Integer> ports, int nodes) {
      this.recording = recording;
      this.scheduler = scheduler;
      this.pending = pending;
      this.ports = ports;
      this.nodes = nodes;
    }

    void create(PlannedCreate create, long dueNanos, long start) {
      send(new Request(Kind.CREATE, create.index(), "POST", "/v1/orders", create.body().encode(), create.idempotencyKey(),
          create.userId(), null, dueNanos), 1, 0, 0, operation -> {
        if (operation.outcome() == Outcome.OK) {
          follow(create.payAfterMillis(), start, create, Kind.PAY, operation.orderId());
          follow(create.readAfterMillis(), start, create, Kind.READ, operation.orderId());
        }
      });
    }

    private void follow(long afterMillis, long start, PlannedCreate create, Kind kind, String orderId) {
      if (afterMillis < 0) {
        return;
      }
      pending.add();
      long dueNanos = Math.max(System.nanoTime(), start + TimeUnit.MILLISECONDS.toNanos(create.dueMillis() + afterMillis));
      Request request = kind == Kind.PAY
          ? new Request(kind, create.index() + 1, "POST", "/v1/orders/" + orderId + "/pay", null, null, create.userId(), orderId, dueNanos)
          : new Request(kind, create.index() + 2, "GET", "/v1/orders/" + orderId, null, null, create.userId(), orderId, dueNanos);
      scheduler.schedule(() -> send(request, 1, 0, 0, operation -> {}), dueNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
    }

    /**
     * {@code longestRequestMillis}: the longest wait of this operation's requests so far, the first counted from its
     * due time, each retry from when it was sent.
     */
    private void send(Request request, int attempt, int inProgressAnswers, long longestRequestMillis, Consumer<Operation> then) {
      long startNanos = attempt == 1 && inProgressAnswers == 0 ? request.dueNanos() : System.nanoTime();
      inFlight.acquireUninterruptibly();
      int port = ports.apply(Math.floorMod(request.nodeIndex() + attempt - 1, nodes));
      long sentNanos = System.nanoTime();
      http.sendAsync(request.build(port), HttpResponse.BodyHandlers.ofString()).whenComplete((response, error) -> {
        inFlight.release();
        recording.sent(sentNanos - startNanos, System.nanoTime() - sentNanos);
        long longest = Math.max(longestRequestMillis, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos));
        Answer answer = Answer.of(request.kind(), response, error);
        boolean inProgress = "request_in_progress".equals(answer.code());
        if (inProgress && inProgressAnswers < IN_PROGRESS_ATTEMPTS) {
          scheduler.schedule(() -> send(request, attempt, inProgressAnswers + 1, longest, then), RETRY_DELAY_MILLIS, TimeUnit.MILLISECONDS);
          return;
        }
        if ((answer.outcome() == Outcome.UNKNOWN || inProgress) && attempt < ATTEMPTS && request.kind() != Kind.READ) {
          scheduler.schedule(() -> send(request, attempt + 1, 0, longest, then), RETRY_DELAY_MILLIS, TimeUnit.MILLISECONDS);
          return;
        }
        // A retry follows an attempt that got no answer or found the key in progress: that attempt may have committed,
        // and a refusal of the retry (shed at the queue, say) cannot tell, so the operation stays unknown.
        boolean earlierMayHaveCommitted = attempt > 1;
        Outcome outcome = inProgress || (earlierMayHaveCommitted && answer.outcome() == Outcome.FAILED) ? Outcome.UNKNOWN : answer.outcome();
        Operation operation = new Operation(request.kind(), outcome, answer.status(), answer.code(), request.userId(),
            answer.orderId() != null ? answer.orderId() : request.orderId(),
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - request.dueNanos()), longest, attempt);
        recording.add(operation);
        try {
          then.accept(operation);
        } finally {
          pending.done();
        }
      });
    }
  }

  /** Operations planned or under way and not yet recorded. */
  private static final class Pending {
    private long count;

    synchronized void add() {
      count++;
    }

    synchronized void done() {
      if (--count == 0) {
        notifyAll();
      }
    }

    synchronized void awaitNone() {
      while (count > 0) {
        try {
          wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(e);
        }
      }
    }
  }

  private record Request(Kind kind, int nodeIndex, String method, String path, String json, String idempotencyKey,
                         String userId, String orderId, long dueNanos) {
    HttpRequest build(int port) {
      HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
          .timeout(CLIENT_TIMEOUT)
          .header("Authorization", "Bearer " + Api.USER_KEY)
          .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
      if (json != null) {
        builder.header("Content-Type", "application/json");
      }
      if (idempotencyKey != null) {
        builder.header("Idempotency-Key", idempotencyKey);
      }
      return builder.build();
    }
  }

  /** What one response (or its absence) tells the client. */
  private record Answer(Outcome outcome, int status, String code, String orderId) {
    static Answer of(Kind kind, HttpResponse<String> response, Throwable error) {
      if (error != null) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        return new Answer(Outcome.UNKNOWN, 0, cause.getClass().getSimpleName(), null);
      }
      int status = response.statusCode();
      JsonObject body = json(response.body());
      String code = body == null ? null : body.getString("code");
      if (status / 100 == 2) {
        boolean paid = kind != Kind.PAY || body != null && "PAID".equals(body.getString("status"));
        return new Answer(paid ? Outcome.OK : Outcome.FAILED, status, code, body == null ? null : body.getString("id"));
      }
      boolean definite = status / 100 == 4 || status == 503;
      return new Answer(definite ? Outcome.FAILED : Outcome.UNKNOWN, status, code, null);
    }

    private static JsonObject json(String text) {
      try {
        return text == null || text.isBlank() || !text.trim().startsWith("{") ? null : new JsonObject(text);
      } catch (DecodeException notJson) {
        return null;
      }
    }
  }
}
