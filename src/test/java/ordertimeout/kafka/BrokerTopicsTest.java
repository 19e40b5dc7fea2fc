package ordertimeout.kafka;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What BROKER_UNREACHABLE counts: the time out of the group, not only the time before the topic check got through,
 * and from the check's beginning, not from the node's start, which waits for its lease first. On a clock of the test's.
 */
class BrokerTopicsTest {
  private final AtomicLong nanos = new AtomicLong(TimeUnit.HOURS.toNanos(5));

  @Test
  void theTimeOutOfTheGroupGoesOnPastTheTopicCheckUntilTheFirstAssignment() {
    AtomicBoolean joined = new AtomicBoolean();
    BrokerTopics topics = new BrokerTopics(joined::get, nanos::get);
    topics.checkBegins();
    topics.failed(BrokerTopics.State.UNREACHABLE, "no broker", true);
    pass(3);
    topics.checked();
    assertThat(topics.secondsWithoutTheBroker()).as("the check got through").isZero();
    assertThat(topics.readyAfterMillis()).isEqualTo(3_000);
    pass(2);
    assertThat(topics.secondsOutOfTheGroup()).as("through, but not assigned yet").isEqualTo(5.0);
    joined.set(true);
    assertThat(topics.secondsOutOfTheGroup()).as("assigned").isZero();
  }

  /** A crash-restart with a long lease: the node waits for its old lease to lapse before it asks the broker at all. */
  @Test
  void theTimeWithoutTheBrokerCountsFromTheTopicCheckNotFromTheLeaseWaitBeforeIt() {
    BrokerTopics topics = new BrokerTopics(() -> false, nanos::get);
    pass(120); // node.leaseSeconds of the node's previous run, waited out
    assertThat(topics.secondsOutOfTheGroup()).as("waiting for the lease, the broker not asked yet").isZero();
    assertThat(topics.secondsWithoutTheBroker()).isZero();
    topics.checkBegins();
    pass(4);
    topics.failed(BrokerTopics.State.UNREACHABLE, "no broker", true);
    assertThat(topics.secondsOutOfTheGroup()).as("since the check began").isEqualTo(4.0);
    assertThat(topics.secondsWithoutTheBroker()).isEqualTo(4.0);
    topics.checkBegins(); // a second call does not start the clock again
    pass(1);
    assertThat(topics.secondsOutOfTheGroup()).isEqualTo(5.0);
  }

  private void pass(long seconds) {
    nanos.addAndGet(TimeUnit.SECONDS.toNanos(seconds));
  }
}
