package ordertimeout.kafka;

import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import ordertimeout.config.AppConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * Checks (and creates when missing) the topics a clustered node needs, and records in {@link BrokerTopics} when that
 * got through. A broker that answers with topics wrong for this service fails the start, as before. One that does not
 * answer does not (decision 0051): the node starts without it and this verticle tries again every
 * {@value #RETRY_MILLIS} ms until the check gets through; the shard ownership then joins the group.
 */
public final class TopicCheckVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(TopicCheckVerticle.class);
  static final long RETRY_MILLIS = 2_000;
  private static final long LOG_EVERY_NANOS = TimeUnit.SECONDS.toNanos(60);

  private final AppConfig config;
  private final BrokerTopics topics;
  private final OpenClients adminClients = new OpenClients();
  private long retryTimer = -1;
  private boolean stopped;
  private long loggedAtNanos;

  public TopicCheckVerticle(AppConfig config, BrokerTopics topics) {
    this.config = config;
    this.topics = topics;
  }

  @Override
  public Future<?> start() {
    topics.checkBegins(); // the times without the broker count from here, not from before the node's lease wait
    return KafkaClients.ensureTopics(vertx, config, adminClients)
        .onSuccess(checked -> topics.checked())
        .recover(failure -> {
          if (!KafkaClients.brokerAbsent(failure)) {
            return Future.failedFuture(failure);
          }
          topics.failed(BrokerTopics.State.UNREACHABLE, failure.toString(), true);
          loggedAtNanos = System.nanoTime();
          log.warn("no Kafka broker at {} answered the topic check ({}): starting without it. Until one does, this "
              + "node owns no shards, closes the orders it takes from its own wheel and relays no events (they wait in "
              + "the outbox unless another node relays them); it checks again every {} ms and joins the timer group "
              + "once the broker answers",
              config.kafka().bootstrapServers(), failure.toString(), RETRY_MILLIS);
          checkLater();
          return Future.succeededFuture();
        });
  }

  /**
   * Closes the admin client of a check under way at once: it would otherwise wait for its calls to time out, and a
   * Vert.x that closes meanwhile would never close it.
   */
  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(retryTimer);
    return adminClients.closeAll(vertx);
  }

  private void checkLater() {
    if (!stopped) {
      retryTimer = vertx.setTimer(RETRY_MILLIS, id -> checkAgain());
    }
  }

  private void checkAgain() {
    // anything the check throws becomes a failed check, tried again: the timer would otherwise end with it
    Future.<Void>succeededFuture().compose(go -> KafkaClients.ensureTopics(vertx, config, adminClients))
        .onComplete(this::checkedAgain);
  }

  private void checkedAgain(AsyncResult<Void> done) {
    if (stopped) {
      return; // the stop closed its client: its failure says nothing of the broker
    }
    if (done.succeeded()) {
      topics.checked();
      log.info("the Kafka broker answers: topics {} and {} ready {} s after the first check; joining the timer group",
          config.kafka().timersTopic(), config.kafka().eventsTopic(), topics.readyAfterMillis() / 1000);
      return;
    }
    BrokerTopics.State state = KafkaClients.brokerAbsent(done.cause())
        ? BrokerTopics.State.UNREACHABLE : BrokerTopics.State.WRONG;
    boolean changed = state != topics.state();
    topics.failed(state, done.cause().toString(), false);
    if (changed || System.nanoTime() - loggedAtNanos >= LOG_EVERY_NANOS) {
      loggedAtNanos = System.nanoTime();
      if (state == BrokerTopics.State.WRONG) {
        log.error("the Kafka broker answers, but its topics are wrong for this service: this node stays out of the "
            + "timer group until they are right (checked every {} ms)", RETRY_MILLIS, done.cause());
      } else {
        log.warn("still no Kafka broker at {} ({}), {} s after the first check; checking again every {} ms",
            config.kafka().bootstrapServers(), done.cause().toString(), (long) topics.secondsWithoutTheBroker(),
            RETRY_MILLIS);
      }
    }
    checkLater();
  }
}
