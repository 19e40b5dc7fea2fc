package ordertimeout.kafka;

import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Whether this clustered node's topic check ({@link KafkaClients#ensureTopics}) has got through to the broker. A node
 * starts without the broker (decision 0051): until the check gets through, nothing else of it talks to Kafka (the shard
 * ownership does not join the group, the outbox relay does not make its producer; the timer fan-out makes its own at
 * its first send, after the group's first assignment), so that no client of this node makes the broker create a topic
 * with its own defaults. Read from any thread; written by the check's verticle.
 */
public final class BrokerTopics {
  /** Where the topic check stands. */
  public enum State {
    /** The check at start has not ended yet (never seen over HTTP: the server starts after that check). */
    CHECKING,
    /** No broker answered the last check (a timeout, a refused connection): tried again. */
    UNREACHABLE,
    /** The broker answered, but its topics are wrong for this service (a timer topic of another partition count). */
    WRONG,
    /** The topics exist with a partition per shard: the node joins the group and relays its outbox. */
    READY
  }

  private final LongSupplier nanoTime;
  /** Whether the group has assigned this node shards at least once. */
  private final BooleanSupplier joined;
  /**
   * When the topic check could first run ({@link #checkBegins}), not when the node started: before it, the node waits
   * for the lease on its id, which may take {@code node.leaseSeconds} after a crash, with the broker not yet asked.
   */
  private volatile long checkBeganNanos;
  private volatile boolean checkBegan;
  private volatile State state = State.CHECKING;
  private volatile String lastFailure;
  private volatile boolean startedWithoutTheBroker;
  private volatile long readyAtNanos;
  private volatile long failedChecks;

  public BrokerTopics(BooleanSupplier joined) {
    this(joined, System::nanoTime);
  }

  /** {@code nanoTime}: the clock the times without the broker are counted on (a test's own). */
  BrokerTopics(BooleanSupplier joined, LongSupplier nanoTime) {
    this.joined = joined;
    this.nanoTime = nanoTime;
  }

  /** For a check alone, with no group to join. */
  public BrokerTopics() {
    this(() -> false);
  }

  public State state() {
    return state;
  }

  public boolean ready() {
    return state == State.READY;
  }

  /** Why the last check failed; null once ready. */
  public String lastFailure() {
    return lastFailure;
  }

  /** The check at start found no broker answering: the node started without it (and may be ready without shards). */
  public boolean startedWithoutTheBroker() {
    return startedWithoutTheBroker;
  }

  /** Starts the clock of the times without the broker: the topic check is about to run, the node's lease taken. */
  public void checkBegins() {
    if (!checkBegan) {
      checkBeganNanos = nanoTime.getAsLong();
      checkBegan = true;
    }
  }

  /** How long this node has run without its topic check getting through, since the check began; 0 once it did. */
  public double secondsWithoutTheBroker() {
    return ready() ? 0 : secondsSinceTheCheckBegan();
  }

  /**
   * How long this node has run, since its topic check began, without the group assigning it shards: its topic check
   * not through, or through but the group never assigned (a group coordinator that does not answer, a consumer that
   * cannot join); 0 once assigned, and 0 before the check began (the node waiting for its lease has not asked the
   * broker yet). What {@code BROKER_UNREACHABLE} counts.
   */
  public double secondsOutOfTheGroup() {
    return joined.getAsBoolean() ? 0 : secondsSinceTheCheckBegan();
  }

  /** How long after the check began it got through; meaningless until {@link #ready()}. */
  public long readyAfterMillis() {
    return (readyAtNanos - checkBeganNanos) / 1_000_000;
  }

  private double secondsSinceTheCheckBegan() {
    return checkBegan ? (nanoTime.getAsLong() - checkBeganNanos) / 1e9 : 0;
  }

  /** How many checks have failed since the start. */
  public long failedChecks() {
    return failedChecks;
  }

  void checked() {
    readyAtNanos = nanoTime.getAsLong();
    lastFailure = null;
    state = State.READY;
  }

  void failed(State why, String failure, boolean atStart) {
    lastFailure = failure;
    failedChecks++;
    if (atStart) {
      startedWithoutTheBroker = true;
    }
    state = why;
  }
}
