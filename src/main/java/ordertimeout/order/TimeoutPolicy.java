package ordertimeout.order;

import ordertimeout.config.AppConfig;

import java.util.Optional;

/** How long an order may stay unpaid, and whether it gets a reminder before its deadline. */
public final class TimeoutPolicy {
  private final AppConfig.Orders config;

  public TimeoutPolicy(AppConfig.Orders config) {
    this.config = config;
  }

  public String defaultCategory() {
    return config.defaultCategory();
  }

  /** The requested timeout when there is one (the API contract holds it within the configured bounds), else the category's. */
  public int timeoutSeconds(String category, Optional<Integer> requested) {
    return requested.orElseGet(() -> config.categoryTimeoutSeconds().get(category));
  }

  /** Seconds after creation when the reminder fires, or empty when the timeout is too short to have one. */
  public Optional<Integer> reminderAfterSeconds(int timeoutSeconds) {
    int before = config.reminderBeforeSeconds();
    return before > 0 && timeoutSeconds > before ? Optional.of(timeoutSeconds - before) : Optional.empty();
  }
}
