package ordertimeout.ops;

/** The SQL of the operations side (gauges and health checks), read-only, kept apart from the order store's. */
final class OpsSql {
  private OpsSql() {}

  /** The outbox rows no relay has published yet, and the age in seconds of the oldest (null when none). */
  static final String OUTBOX_BACKLOG =
      "SELECT count(*), extract(epoch from now() - min(created_at)) FROM outbox WHERE published_at IS NULL";

  static final String PING = "SELECT 1";

  /** Flyway's record of the versioned migrations it ran (repeatable ones have no version). */
  static final String APPLIED_MIGRATIONS = "SELECT version, success FROM flyway_schema_history WHERE version IS NOT NULL";
}
