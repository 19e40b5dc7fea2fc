package ordertimeout.kafka;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/** What BROKER_UNREACHABLE counts: the time out of the group, not only the time before the topic check got through. */
class BrokerTopicsTest {
  @Test
  void theTimeOutOfTheGroupGoesOnPastTheTopicCheckUntilTheFirstAssignment() throws Exception {
    AtomicBoolean joined = new AtomicBoolean();
    BrokerTopics topics = new BrokerTopics(joined::get);
    topics.failed(BrokerTopics.State.UNREACHABLE, "no broker", true);
    Thread.sleep(1_100);
    topics.checked();
    assertThat(topics.secondsWithoutTheBroker()).as("the check got through").isZero();
    assertThat(topics.secondsOutOfTheGroup()).as("through, but not assigned yet").isGreaterThanOrEqualTo(1.0);
    joined.set(true);
    assertThat(topics.secondsOutOfTheGroup()).as("assigned").isZero();
  }
}
