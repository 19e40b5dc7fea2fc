package ordertimeout.http;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.OwnNode;
import ordertimeout.support.Sql;
import ordertimeout.support.TcpProxy;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The database goes silent (the network holds every byte, the connections stay open: no error ever reaches the
 * node, and PostgreSQL's own timeouts cannot end what it never received). Creates, pays and reads sent then are all
 * answered within {@code intake.answerWithinMillis}: a request whose statement was already on its way answers 504
 * ({@code outcome_unknown} for a create or pay, {@code read_timeout} for a read), one that could not get a connection
 * 503 {@code database_unavailable}. Once the database answers again, the same create (same Idempotency-Key) and the
 * same pay are answered with what happened, the create stored once, and the node serves as before.
 */
class AnswerDeadlineTest {
  private static final Duration SAFETY = Duration.ofSeconds(60);
  private static final String SKU = "SKU-ANSWER-DEADLINE";
  private static final int ANSWER_WITHIN_MILLIS = 2500;

  /**
   * Its invariants are checked over the whole database: whatever an earlier test left would count against it. A live
   * lease an earlier class's node left would turn the status cache off, which the kept order's read needs.
   */
  @BeforeEach
  void emptyDatabase() {
    TestDatabase.resetForANewNode();
  }

  @Test
  void everyRequestIsAnsweredWithinItsBoundWhileTheDatabaseIsSilentAndAResendLearnsTheOutcome() throws Exception {
    try (TcpProxy proxy = proxyToDatabase();
         // every read reaches the database: it warms the pool and then meets the silence
         OwnNode node = nodeBehind(proxy, Map.of("OT_INTAKE_STATUS_CACHE_ENTRIES", "0"));
         AutoCloseable reachable = proxy::restore) { // after a failure too, before the node closes
      Api api = node.api();
      api.setStock(SKU, 100);
      String unpaid = api.createOrders(1, 3600, SKU).get(0);
      String key = UUID.randomUUID().toString();

      // connections used a moment ago are open in the pool when the database goes silent
      List.of(api.order(unpaid), api.order(unpaid), api.order(unpaid)).forEach(read -> assertThat(read.status()).isEqualTo(200));
      proxy.blackhole();
      long sent = System.nanoTime();
      CompletableFuture<Api.Response> create = api.sendAsync(api.request("POST", "/v1/orders", Api.USER_KEY, body().encode())
          .header("Idempotency-Key", key));
      CompletableFuture<Api.Response> pay = api.postAsync("/v1/orders/" + unpaid + "/pay", Api.USER_KEY);
      CompletableFuture<Api.Response> read = api.sendAsync(api.request("GET", "/v1/orders/" + unpaid, Api.USER_KEY, null));
      Api.Response created = create.get(20, TimeUnit.SECONDS);
      Api.Response paid = pay.get(20, TimeUnit.SECONDS);
      Api.Response found = read.get(20, TimeUnit.SECONDS);
      long answeredWithinMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
      System.out.printf("AnswerDeadlineTest: database silent; create %d %s, pay %d %s, read %d %s, all answered within %d ms%n",
          created.status(), created.code(), paid.status(), paid.code(), found.status(), found.code(), answeredWithinMillis);

      assertThat(answeredWithinMillis).as("answered within the bound (and the machine's slack)")
          .isLessThan(2L * ANSWER_WITHIN_MILLIS);
      assertThat(List.of(created, paid)).allSatisfy(write -> assertBounded(write, "outcome_unknown"));
      assertBounded(found, "read_timeout");
      assertThat(Stream.of(created, paid, found).map(Api.Response::status))
          .as("a statement already on its way waited for the answer deadline").contains(504);

      proxy.restore();
      Await.until("the same create answers what happened", SAFETY, () -> api.createOrder(key, body()).status() == 201);
      Await.until("the same pay answers what happened", SAFETY, () -> api.pay(unpaid).status() == 200);
      assertThat(api.order(unpaid).json().getString("status")).isEqualTo("PAID");
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE user_id = 'u-answer-deadline'")).as("the create stored once").isEqualTo(1);
      assertThat(api.createOrder(UUID.randomUUID().toString(), body()).status()).as("serving as before").isEqualTo(201);
    }
    Invariants.assertHold();
  }

  /**
   * With the status cache on (the default on a node alone), an order the node created or read lately is still
   * answered while the database is silent: the node is the only writer, and no write of that order can commit
   * meanwhile. One it does not keep (cancelled since it was created: the cancel forgot it) answers as above.
   */
  @Test
  void aKeptOrderIsStillAnsweredWhileTheDatabaseIsSilent() throws Exception {
    try (TcpProxy proxy = proxyToDatabase(); OwnNode node = nodeBehind(proxy, Map.of());
         AutoCloseable reachable = proxy::restore) {
      Api api = node.api();
      api.setStock(SKU, 100);
      List<String> orders = api.createOrders(2, 3600, SKU);
      String kept = orders.get(0);
      String notKept = orders.get(1);
      assertThat(api.cancel(notKept).status()).isEqualTo(200);
      JsonObject before = api.order(kept).json();

      proxy.blackhole();
      long sent = System.nanoTime();
      Api.Response found = api.order(kept);
      long keptMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
      Api.Response other = api.order(notKept);
      System.out.printf("AnswerDeadlineTest: database silent; the kept order answered %d in %d ms, the other %d %s%n",
          found.status(), keptMillis, other.status(), other.code());
      assertThat(found.status()).as(found.body()).isEqualTo(200);
      assertThat(found.json()).isEqualTo(before);
      assertBounded(other, "read_timeout");
      proxy.restore();
    }
    Invariants.assertHold();
  }

  private static TcpProxy proxyToDatabase() {
    PgConnectOptions database = TestDatabase.connectOptions();
    return TcpProxy.to(database.getHost(), database.getPort());
  }

  /** A node that reaches the database through {@code proxy}, with this test's short bounds and {@code more} settings. */
  private static OwnNode nodeBehind(TcpProxy proxy, Map<String, String> more) {
    Map<String, String> settings = new HashMap<>(Map.of(
        "OT_INTAKE_ANSWER_WITHIN_MILLIS", Integer.toString(ANSWER_WITHIN_MILLIS),
        "OT_INTAKE_REQUEST_DEADLINE_MILLIS", "1000",
        "OT_DATABASE_INTAKE_STATEMENT_TIMEOUT_MILLIS", "1000",
        "OT_CLIENTS_DEFAULT_CREATES_PER_SECOND", "0"));
    settings.putAll(more);
    return OwnNode.start(Vertx.vertx(), new PgConnectOptions(TestDatabase.connectOptions()).setHost("127.0.0.1").setPort(proxy.port()),
        settings);
  }

  private static void assertBounded(Api.Response answer, String timeoutCode) {
    assertThat(answer.raw().headers().firstValue("Retry-After")).as(answer.body()).hasValue("1");
    if (answer.status() == 504) {
      assertThat(answer.code()).isEqualTo(timeoutCode);
    } else {
      assertThat(answer.status()).as(answer.body()).isEqualTo(503);
      assertThat(answer.code()).isIn(Set.of("database_unavailable"));
    }
  }

  private static JsonObject body() {
    return new JsonObject().put("userId", "u-answer-deadline").put("timeoutSeconds", 3600)
        .put("items", List.of(Map.of("sku", SKU, "qty", 1)));
  }
}
