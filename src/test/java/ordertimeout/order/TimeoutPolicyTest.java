package ordertimeout.order;

import ordertimeout.config.AppConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class TimeoutPolicyTest {

  private static TimeoutPolicy policy(int reminderBeforeSeconds) {
    return new TimeoutPolicy(new AppConfig.Orders("standard", Map.of("standard", 900, "flash", 120), 10, 86_400,
        reminderBeforeSeconds, 5, 50, 100, 600, false));
  }

  @Test
  void aRequestedTimeoutWinsOverTheCategorysAndTheCategorysIsTheDefault() {
    TimeoutPolicy policy = policy(60);
    assertThat(policy.defaultCategory()).isEqualTo("standard");
    assertThat(policy.timeoutSeconds("flash", Optional.of(30))).isEqualTo(30);
    assertThat(policy.timeoutSeconds("flash", Optional.empty())).isEqualTo(120);
    assertThat(policy.timeoutSeconds("standard", Optional.empty())).isEqualTo(900);
  }

  @Test
  void theReminderFiresItsConfiguredTimeBeforeTheDeadlineWhenThereIsTimeForIt() {
    TimeoutPolicy policy = policy(60);
    assertThat(policy.reminderAfterSeconds(900)).contains(840);
    assertThat(policy.reminderAfterSeconds(61)).contains(1);
    assertThat(policy.reminderAfterSeconds(60)).as("it would fire at creation").isEmpty();
    assertThat(policy.reminderAfterSeconds(30)).isEmpty();
  }

  @Test
  void noReminderWhenNoneIsConfigured() {
    assertThat(policy(0).reminderAfterSeconds(900)).isEmpty();
  }
}
