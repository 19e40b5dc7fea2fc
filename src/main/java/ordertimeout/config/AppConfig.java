package ordertimeout.config;

import ordertimeout.clock.WallClock;
import ordertimeout.order.Digests;

import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.time.DateTimeException;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Pattern;

/** The whole configuration, read once at start into typed records and validated. */
public record AppConfig(
    Node node,
    Http http,
    Intake intake,
    Database database,
    List<ApiKey> apiKeys,
    Orders orders,
    Timer timer,
    Close close,
    Sweep sweep,
    Reconciliation reconciliation,
    Retention retention,
    Limits limits,
    Clients clients,
    Metrics metrics,
    Alarms alarms,
    Drain drain,
    Logging logging,
    Kafka kafka,
    Redis redis,
    Health health,
    Events events,
    BulkJobs bulkJobs) {

  /**
   * {@code id}: part of every order id, held by a lease in PostgreSQL of {@code leaseSeconds} (renewed every third of
   * it) so that two running nodes never share one; {@code clockOffsetMillis}: fault injection only, this node's wall
   * clock runs this far ahead (negative: behind).
   */
  public record Node(int id, int leaseSeconds, long clockOffsetMillis) {
    public WallClock wallClock() {
      return new WallClock(clockOffsetMillis);
    }
  }

  /**
   * {@code idleTimeoutSeconds}: a connection on which nothing is read or written for this long is closed;
   * {@code requestReadTimeoutSeconds}: a request's head and body must have arrived within this long of the
   * server starting to wait for it (the connection opened or the previous request answered), or the
   * connection is closed; {@code maxConnections}: open connections per node, one more is closed at once.
   */
  public record Http(String host, int port, int instances, int maxBodyBytes, int idleTimeoutSeconds,
                     int requestReadTimeoutSeconds, int maxConnections) {}

  /**
   * Group commit of creates and of pays: per node (over all its intake instances) at most {@code groupsInFlight}
   * transactions of each, of up to {@code groupMaxSize} requests; at most {@code maxQueued} requests wait for a group,
   * each at most {@code requestDeadlineMillis} (then it answers 503 {@code overloaded} and is never committed). A SKU
   * whose row stayed locked past the intake pool's lock wait has its creates refused at once for {@code lockedSkuMillis}.
   * Every request is answered within {@code answerWithinMillis} of its arrival (504 when it could not be decided).
   * A node alone keeps up to {@code statusCacheEntries} orders it read in its status cache (0: none; off with Kafka on).
   */
  public record Intake(int groupMaxSize, int groupsInFlight, int maxQueued, int requestDeadlineMillis, int lockedSkuMillis,
                       int answerWithinMillis, int statusCacheEntries) {}

  /**
   * {@code url} is empty for the embedded PostgreSQL; {@code embeddedFsync} has it flush each commit to disk, off only
   * where a lost commit does not matter (the tests, the benchmarks); {@code embeddedSharedBuffersMb} and
   * {@code embeddedMaxWalSizeMb} are its {@code shared_buffers} and {@code max_wal_size}.
   * {@code idleInTransactionTimeoutMillis} and {@code keepaliveSeconds} hold for every pool's sessions;
   * {@code intake}, {@code deadlines} and {@code background} (reconciliation, retention, the outbox relay) are the waits
   * of those pools.
   */
  public record Database(String url, String dataDir, boolean embeddedFsync, int embeddedSharedBuffersMb,
                         int embeddedMaxWalSizeMb, int poolSize, int shards,
                         int idleInTransactionTimeoutMillis, int keepaliveSeconds, PoolWaits intake, PoolWaits deadlines,
                         PoolWaits background) {
    public boolean embedded() {
      return url.isBlank();
    }
  }

  /**
   * A pool's bounds on waiting: {@code lockTimeoutMillis} and {@code statementTimeoutMillis} are its sessions'
   * {@code lock_timeout} and {@code statement_timeout}; {@code maxWaitQueue} the callers that may wait for one of its
   * connections ({@link #UNBOUNDED} for none).
   */
  public record PoolWaits(int lockTimeoutMillis, int statementTimeoutMillis, int maxWaitQueue) {
    public static final int UNBOUNDED = -1;
  }

  /** GET /health/ready counts the database down when it does not answer within {@code databaseTimeoutMillis}. */
  public record Health(int databaseTimeoutMillis) {}

  public enum Role { USER, ADMIN }

  /** {@code client} scopes idempotency keys and per-client limits. */
  public record ApiKey(String key, Role role, String client) {}

  public record Orders(
      String defaultCategory,
      Map<String, Integer> categoryTimeoutSeconds,
      int minTimeoutSeconds,
      int maxTimeoutSeconds,
      int reminderBeforeSeconds,
      int maxUnpaidPerUser,
      int maxItems,
      int maxQty,
      int paymentHoldSeconds,
      boolean reopenOnLatePayment) {}

  public record Timer(int tickMillis, int batchSize, int reloadPageSize) {}

  /**
   * A close batch is tried {@code maxAttempts} times with {@code backoffMillis} doubling; at most {@code maxInFlight}
   * at once. An order whose close the database refused {@code parkAfterFailures} times (counted in PostgreSQL, across
   * restarts and nodes) is parked: no longer tried until an admin retries it. While close batches queue and more than
   * 1% of a second's creates take longer than {@code yieldToCreatesAboveMillis}, the close transactions allowed at once
   * halve each second, down to one, and grow back by one a second otherwise (0: always {@code maxInFlight}).
   */
  public record Close(int maxAttempts, int backoffMillis, int maxInFlight, int parkAfterFailures, int yieldToCreatesAboveMillis) {}

  /**
   * In a cluster the sweep also covers the shards no live lease claims once it has found them so for
   * {@code unclaimedGraceSeconds}, taking their orders overdue by more than that (decision 0050).
   */
  public record Sweep(int intervalSeconds, int graceSeconds, int pageSize, int unclaimedGraceSeconds) {}

  /**
   * Operators' bulk actions (bulk-close, bulk-extend): {@code batchSize} orders per transaction, {@code batchPauseMillis}
   * between batches (so a large job leaves room for live traffic), a job's lease of {@code leaseSeconds} (renewed by each
   * batch; a node that died frees it then), failed after {@code maxAttempts} claims without finishing; idle nodes look for
   * jobs every {@code pollMillis}.
   */
  public record BulkJobs(int batchSize, int batchPauseMillis, int leaseSeconds, int maxAttempts, int pollMillis) {}

  /**
   * The stock-invariant and overdue-order check: every day at {@code at} (wall-clock time in {@code zone}), run at
   * start when that time passed with no run since; with {@code at} null (configured off), every
   * {@code intervalHours} instead, first that long after start.
   */
  public record Reconciliation(int intervalHours, LocalTime at, ZoneId zone) {
    public boolean daily() {
      return at != null;
    }
  }

  /**
   * Deletes, every {@code intervalSeconds} and in batches of {@code batchSize} rows: order_log rows older
   * than {@code orderLogHours}, events older than {@code publishedOutboxHours} that every sink wanting them has
   * (the Kafka relay when on, each matching webhook), every event older than {@code eventsMaxDays} (delivered or
   * not, counted), and idempotency keys older than {@code idempotencyKeyHours} (a replay after that creates a new order).
   */
  public record Retention(int intervalSeconds, int batchSize, int orderLogHours, int publishedOutboxHours,
                          int idempotencyKeyHours, int eventsMaxDays, int jobsDays, Partitions partitions) {}

  /**
   * The partitions of orders and order_items (V11), kept by the partitions job every {@code intervalSeconds}: one per
   * {@code partitionDays} UTC days, created {@code aheadDays} ahead; a partition whose range ended more than
   * {@code ordersDays} ago and holds no unpaid order is taken out, dropped ({@code archive} false) or moved to the
   * orders_archive schema ({@code retention.archive: table}).
   */
  public record Partitions(int intervalSeconds, int ordersDays, int partitionDays, int aheadDays, boolean archive,
                           int lockTimeoutMillis) {
    public static final String NONE = "none";
    public static final String TABLE = "table";
  }

  /** A rate of 0 means no cap. */
  public record Limits(int closesPerSecond, int closesBurst) {}

  /**
   * What one API client (the {@code client} of its keys) may hold and do, against a client hoarding stock: unpaid
   * orders and the units in them at once, the longest timeout it may ask for, and its create rate (token bucket;
   * a rate of 0 means no cap).
   */
  public record ClientLimits(long maxUnpaidOrders, long maxReservedUnits, int maxTimeoutSeconds, int createsPerSecond,
                             int createsBurst) {}

  /** The limits of every client: {@code defaults}, unless {@code overrides} names the client. */
  public record Clients(ClientLimits defaults, Map<String, ClientLimits> overrides) {
    public ClientLimits of(String client) {
      return overrides.getOrDefault(client, defaults);
    }
  }

  /**
   * {@code windowSeconds}: the sliding window of the published percentiles and of the alarms;
   * {@code outboxRefreshSeconds}: how often the outbox gauges are read from the database.
   */
  public record Metrics(int windowSeconds, int outboxRefreshSeconds) {}

  /**
   * Alarm thresholds: an alarm fires when its value goes over its threshold and clears when it is back
   * at or under it; {@link #OFF} turns one off.
   */
  public record Alarms(
      int evaluateSeconds,
      long latenessP99Millis,
      long sweepCatchesPerMinute,
      long outboxOldestAgeSeconds,
      long closeBatchesGivenUp,
      long reconciliationDifferences,
      long eventsDroppedUndelivered,
      long parkedOrders,
      long nodesWithOtherWebhooks,
      long redisUnreachableSeconds,
      long brokerUnreachableSeconds) {
    public static final long OFF = -1;
  }

  /**
   * Kafka, off when {@code bootstrapServers} is empty (one node owns every shard). On: shard ownership is
   * the partition assignment of consumer group {@code groupId} on {@code timersTopic} (one partition per
   * shard, created at start when missing), new timers travel through that topic to their shard's owner,
   * and the outbox relay publishes to {@code eventsTopic} every {@code relayIntervalMillis}, at most
   * {@code relayBatchSize} events per transaction. {@code readyWithoutBroker}: whether a node that started without
   * the broker is ready before it joins the group (decision 0051); by default it answers not ready until then.
   */
  public record Kafka(String bootstrapServers, String timersTopic, String eventsTopic, String groupId,
                      int replicationFactor, int sessionTimeoutMillis, int relayIntervalMillis, int relayBatchSize,
                      int deliveryTimeoutMillis, boolean readyWithoutBroker) {
    public boolean enabled() {
      return !bootstrapServers.isBlank();
    }
  }

  /** On SIGTERM: how long to wait for the close batches in flight before Vert.x closes. */
  public record Drain(int timeoutSeconds) {}

  /**
   * {@code format}: one JSON object per line (for log shippers) or a plain pattern (for a terminal);
   * {@code rootLevel}: the root logger's level, null when not configured (then logback.xml's stays:
   * OT_LOG_LEVEL, else INFO); {@code levels}: logger name to level, e.g. io.netty: WARN.
   */
  public record Logging(LogFormat format, String rootLevel, Map<String, String> levels) {}

  public enum LogFormat { JSON, TEXT }

  /**
   * Redis, shared by the nodes of a cluster for the cluster-wide token buckets and the singleton-job
   * locks; off while {@code url} is empty. {@code timeoutMillis}: a call that takes longer counts as
   * Redis being unreachable; {@code whenUnreachable}: what the limiter does for creates then (closes take the
   * node's own bucket either way); {@code lockTtlSeconds}:
   * the lease of a job lock while its run goes on (renewed every third of it); {@code keyPrefix}: the
   * first part of every key this service writes ({@code <keyPrefix>:bucket:closes}).
   */
  public record Redis(String url, String keyPrefix, int timeoutMillis, WhenUnreachable whenUnreachable, int lockTtlSeconds) {
    public boolean enabled() {
      return !url.isBlank();
    }
  }

  /**
   * A webhook: every event whose type is among {@code types} (all when empty) and whose order belongs to
   * {@code client} (any when null) is POSTed to {@code url}, signed with {@code secret} (Standard Webhooks).
   */
  public record Webhook(String url, String secret, Set<String> types, String client) {
    /** Never the secret: a record's default toString would log it. */
    @Override
    public String toString() {
      return "Webhook[" + Secrets.withoutPasswords(url) + "]";
    }
  }

  /**
   * Events out besides Kafka. The dispatcher looks for new events every {@code dispatchIntervalMillis} (at most
   * {@code batchSize} at a time), but only every {@code dispatchWhileClosesWaitMillis} while this node's oldest close
   * batch has waited longer than that for a place (a deadline storm: the closes get the database first; 0, never held
   * back); each webhook delivery gets {@code timeoutMillis} per attempt and is retried with
   * exponential backoff from {@code backoffMinMillis} to {@code backoffMaxMillis} (with jitter) for
   * {@code retrySeconds} after its first attempt, then marked failed; at most {@code maxInFlight} requests per webhook
   * and node, so that a slow webhook holds back only its own deliveries.
   */
  public record Events(List<Webhook> webhooks, int dispatchIntervalMillis, int dispatchWhileClosesWaitMillis,
                       int batchSize, int timeoutMillis, int retrySeconds, int backoffMinMillis, int backoffMaxMillis,
                       int maxInFlight) {
    /**
     * What decides which webhook gets which event (each webhook's url, types and client, in any order; not the
     * secrets), as hex SHA-256: equal on nodes that make and send the same deliveries.
     */
    public String webhooksFingerprint() {
      String[] webhookLines = webhooks.stream()
          .map(webhook -> webhook.url() + " " + new TreeSet<>(webhook.types()) + " " + webhook.client())
          .sorted()
          .toArray(String[]::new);
      return HexFormat.of().formatHex(Digests.sha256(webhookLines));
    }
  }

  public static final Set<String> EVENT_TYPES =
      Set.of("ORDER_CREATED", "ORDER_PAID", "ORDER_CLOSED", "ORDER_CLOSE_REMINDER", "ORDER_DEADLINE_EXTENDED",
          "ORDER_LATE_PAYMENT");

  /**
   * For the creates while Redis is unreachable: {@code LOCAL}, this node's own bucket decides (the default);
   * {@code DENY}, none is granted (503) until Redis answers. The closes always take this node's own bucket.
   */
  public enum WhenUnreachable { LOCAL, DENY }

  /** The level names logback accepts; anything else is refused rather than silently read as DEBUG. */
  static final Set<String> LOG_LEVELS = Set.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF");
  private static final String LOG_LEVEL_NAMES = "TRACE, DEBUG, INFO, WARN, ERROR, OFF";

  static final Set<String> DEV_KEYS = Set.of("dev-user-key", "dev-admin-key");
  private static final int SEVEN_DAYS = 7 * 24 * 3600;
  private static final long ONE_DAY_MILLIS = 24 * 3600 * 1000L;

  public static AppConfig from(ConfigSource source) {
    List<ApiKey> apiKeys = apiKeys(source);
    Orders orders = orders(source);
    AppConfig config = new AppConfig(
        new Node(
            source.integer("node.id", 1, 0, 1023),
            source.integer("node.leaseSeconds", 10, 3, 300),
            source.number("node.clockOffsetMillis", 0, -ONE_DAY_MILLIS, ONE_DAY_MILLIS)),
        new Http(
            source.string("http.host", "127.0.0.1"),
            source.integer("http.port", 8080, 0, 65535),
            source.integer("http.instances", 2, 1, 64),
            source.integer("http.maxBodyBytes", 65536, 1024, 16 * 1024 * 1024),
            source.integer("http.idleTimeoutSeconds", 60, 1, 3600),
            source.integer("http.requestReadTimeoutSeconds", 30, 1, 3600),
            source.integer("http.maxConnections", 10_000, 1, 1_000_000)),
        new Intake(
            source.integer("intake.groupMaxSize", 256, 1, 10_000),
            source.integer("intake.groupsInFlight", 1, 1, 64),
            source.integer("intake.maxQueued", 1024, 1, 1_000_000),
            source.integer("intake.requestDeadlineMillis", 5000, 10, 600_000),
            source.integer("intake.lockedSkuMillis", 3000, 0, 600_000),
            source.integer("intake.answerWithinMillis", 10_000, 100, 3_600_000),
            source.integer("intake.statusCacheEntries", 200_000, 0, 10_000_000)),
        new Database(
            source.string("database.url", ""),
            source.string("database.dataDir", "./data"),
            source.bool("database.embeddedFsync", true),
            source.integer("database.embeddedSharedBuffersMb", 2048, 16, 1_048_576),
            source.integer("database.embeddedMaxWalSizeMb", 8192, 64, 1_048_576),
            source.integer("database.poolSize", 8, 1, 200),
            source.integer("database.shards", 64, 1, 4096),
            source.integer("database.idleInTransactionTimeoutMillis", 10_000, 100, 3_600_000),
            source.integer("database.keepaliveSeconds", 30, 1, 7200),
            poolWaits(source, "database.intake", 1000, 5000, source.integer("database.intake.maxWaitQueue", 128, 1, 1_000_000)),
            poolWaits(source, "database.deadlines", 10_000, 30_000, PoolWaits.UNBOUNDED),
            poolWaits(source, "database.background", 10_000, 300_000, PoolWaits.UNBOUNDED)),
        apiKeys,
        orders,
        new Timer(
            source.integer("timer.tickMillis", 10, 1, 10),
            source.integer("timer.batchSize", 4000, 1, 100_000),
            source.integer("timer.reloadPageSize", 50_000, 100, 1_000_000)),
        new Close(
            source.integer("close.maxAttempts", 3, 1, 100),
            source.integer("close.backoffMillis", 50, 1, 60_000),
            source.integer("close.maxInFlight", 4, 1, 256),
            source.integer("close.parkAfterFailures", 10, 1, 1000),
            source.integer("close.yieldToCreatesAboveMillis", 50, 0, 60_000)),
        new Sweep(
            source.integer("sweep.intervalSeconds", 5, 1, 3600),
            source.integer("sweep.graceSeconds", 2, 0, 3600),
            source.integer("sweep.pageSize", 1000, 1, 100_000),
            source.integer("sweep.unclaimedGraceSeconds", 30, 0, 3600)),
        reconciliation(source),
        retention(source, orders),
        new Limits(
            source.integer("limits.closesPerSecond", 0, 0, 10_000_000),
            source.integer("limits.closesBurst", 1000, 1, 10_000_000)),
        clients(source, orders, apiKeys),
        new Metrics(
            source.integer("metrics.windowSeconds", 60, 1, 3600),
            source.integer("metrics.outboxRefreshSeconds", 5, 1, 3600)),
        new Alarms(
            source.integer("alarms.evaluateSeconds", 5, 1, 3600),
            source.number("alarms.latenessP99Millis", 1000, Alarms.OFF, SEVEN_DAYS * 1000L),
            source.number("alarms.sweepCatchesPerMinute", 0, Alarms.OFF, Long.MAX_VALUE),
            source.number("alarms.outboxOldestAgeSeconds", Alarms.OFF, Alarms.OFF, Long.MAX_VALUE),
            source.number("alarms.closeBatchesGivenUp", 0, Alarms.OFF, Long.MAX_VALUE),
            source.number("alarms.reconciliationDifferences", 0, Alarms.OFF, Long.MAX_VALUE),
            source.number("alarms.eventsDroppedUndelivered", 0, Alarms.OFF, Long.MAX_VALUE),
            source.number("alarms.parkedOrders", 0, Alarms.OFF, Long.MAX_VALUE),
            source.number("alarms.nodesWithOtherWebhooks", 0, Alarms.OFF, Long.MAX_VALUE),
            source.number("alarms.redisUnreachableSeconds", 30, Alarms.OFF, Long.MAX_VALUE),
            source.number("alarms.brokerUnreachableSeconds", 30, Alarms.OFF, Long.MAX_VALUE)),
        new Drain(source.integer("drain.timeoutSeconds", 10, 0, 3600)),
        logging(source),
        new Kafka(
            source.string("kafka.bootstrapServers", ""),
            source.string("kafka.timersTopic", "order-timers"),
            source.string("kafka.eventsTopic", "order-events"),
            source.string("kafka.groupId", "order-timeout"),
            source.integer("kafka.replicationFactor", 3, 1, 16),
            source.integer("kafka.sessionTimeoutMillis", 10_000, 6_000, 300_000),
            source.integer("kafka.relayIntervalMillis", 100, 1, 60_000),
            source.integer("kafka.relayBatchSize", 1000, 1, 100_000),
            source.integer("kafka.deliveryTimeoutMillis", 15_000, 1000, 300_000),
            source.bool("kafka.readyWithoutBroker", false)),
        redis(source),
        new Health(source.integer("health.databaseTimeoutMillis", 1000, 10, 60_000)),
        events(source, apiKeys),
        new BulkJobs(
            source.integer("bulkJobs.batchSize", 500, 1, 10_000),
            source.integer("bulkJobs.batchPauseMillis", 10, 0, 60_000),
            source.integer("bulkJobs.leaseSeconds", 30, 2, 3600),
            source.integer("bulkJobs.maxAttempts", 5, 1, 100),
            source.integer("bulkJobs.pollMillis", 1000, 10, 60_000)));
    config.refuseDevKeysOffLoopback();
    config.requireAnswerAfterDeadline();
    config.requirePartitionLockWaitShorterThanIntakes();
    source.requireEveryKeyRead();
    return config;
  }

  /** {@code prefix}.lockTimeoutMillis and .statementTimeoutMillis of one pool, with their defaults. */
  private static PoolWaits poolWaits(ConfigSource source, String prefix, int lockTimeoutMillis, int statementTimeoutMillis,
                                     int maxWaitQueue) {
    return new PoolWaits(
        source.integer(prefix + ".lockTimeoutMillis", lockTimeoutMillis, 10, 600_000),
        source.integer(prefix + ".statementTimeoutMillis", statementTimeoutMillis, 100, 3_600_000),
        maxWaitQueue);
  }

  private static List<ApiKey> apiKeys(ConfigSource source) {
    List<ApiKey> keys = new ArrayList<>();
    List<?> entries = source.list("auth.keys");
    for (int i = 0; i < entries.size(); i++) {
      String at = "auth.keys[" + i + "]";
      if (!(entries.get(i) instanceof Map<?, ?> entry)) {
        throw new ConfigException(at, "expected {key, role, client}");
      }
      String key = String.valueOf(entry.get("key"));
      if (entry.get("key") == null || key.length() < 8) {
        throw new ConfigException(at + ".key", "a key of at least 8 characters is required");
      }
      Role role;
      try {
        role = Role.valueOf(String.valueOf(entry.get("role")).toUpperCase());
      } catch (IllegalArgumentException e) {
        throw new ConfigException(at + ".role", "expected user or admin");
      }
      Object client = entry.get("client");
      if (client == null || client.toString().isBlank()) {
        throw new ConfigException(at + ".client", "a client name is required");
      }
      if (keys.stream().anyMatch(k -> k.key().equals(key))) {
        throw new ConfigException(at + ".key", "the same key is configured twice");
      }
      keys.add(new ApiKey(key, role, client.toString()));
    }
    if (keys.isEmpty()) {
      throw new ConfigException("auth.keys", "at least one API key is required");
    }
    return List.copyOf(keys);
  }

  private static Orders orders(ConfigSource source) {
    Map<String, Integer> categories = new LinkedHashMap<>();
    source.map("orders.categories").forEach((name, seconds) -> {
      String key = "orders.categories." + name;
      if (!(seconds instanceof Integer value) || value < 1 || value > SEVEN_DAYS) {
        throw new ConfigException(key, "expected whole seconds in [1, " + SEVEN_DAYS + "], found " + seconds);
      }
      categories.put(name, value);
    });
    if (categories.isEmpty()) {
      throw new ConfigException("orders.categories", "at least one category is required");
    }
    String defaultCategory = source.string("orders.defaultCategory", "physical");
    if (!categories.containsKey(defaultCategory)) {
      throw new ConfigException("orders.defaultCategory", "'" + defaultCategory + "' is not among orders.categories");
    }
    int min = source.integer("orders.minTimeoutSeconds", 1, 1, SEVEN_DAYS);
    int max = source.integer("orders.maxTimeoutSeconds", SEVEN_DAYS, min, SEVEN_DAYS);
    return new Orders(
        defaultCategory,
        Map.copyOf(categories),
        min,
        max,
        source.integer("orders.reminderBeforeSeconds", 300, 0, SEVEN_DAYS),
        source.integer("orders.maxUnpaidPerUser", 100, 1, 1_000_000),
        source.integer("orders.maxItems", 50, 1, 1000),
        source.integer("orders.maxQty", 10_000, 1, 1_000_000),
        source.integer("orders.paymentHoldSeconds", 600, 1, SEVEN_DAYS),
        source.bool("orders.reopenOnLatePayment", false));
  }

  private static Retention retention(ConfigSource source, Orders orders) {
    int keyHours = idempotencyKeyHours(source, orders);
    String archive = source.string("retention.archive", Partitions.NONE);
    if (!archive.equals(Partitions.NONE) && !archive.equals(Partitions.TABLE)) {
      throw new ConfigException("retention.archive", "expected none or table, found '" + archive + "'");
    }
    return new Retention(
        source.integer("retention.intervalSeconds", 60, 1, 24 * 3600),
        source.integer("retention.batchSize", 1000, 1, 100_000),
        source.integer("retention.orderLogHours", 72, 1, 24 * 365 * 10),
        source.integer("retention.publishedOutboxHours", 24, 1, 24 * 365 * 10),
        keyHours,
        source.integer("retention.eventsMaxDays", 7, 1, 3650),
        source.integer("retention.jobsDays", 90, 1, 3650),
        new Partitions(
            source.integer("retention.partitionsIntervalSeconds", 600, 1, 24 * 3600),
            source.integer("retention.ordersDays", 30, 1, 3650),
            source.integer("retention.partitionDays", 7, 1, 31),
            source.integer("retention.partitionsAhead", 3, 1, 366),
            archive.equals(Partitions.TABLE),
            source.integer("retention.partitionLockTimeoutMillis", 200, 10, 60_000)));
  }

  /**
   * An idempotency key must outlive its order's deadline: a client retrying a create while the order it made is still
   * open must get that order back, not a second one. The longest deadline is orders.maxTimeoutSeconds plus the
   * payment hold (orders.paymentHoldSeconds).
   */
  private static int idempotencyKeyHours(ConfigSource source, Orders orders) {
    int keyHours = source.integer("retention.idempotencyKeyHours", 169, 1, 24 * 365 * 10);
    long longestDeadlineSeconds = (long) orders.maxTimeoutSeconds() + orders.paymentHoldSeconds();
    if (keyHours * 3600L < longestDeadlineSeconds) {
      throw new ConfigException("retention.idempotencyKeyHours", keyHours + " hours is shorter than the longest deadline ("
          + "orders.maxTimeoutSeconds " + orders.maxTimeoutSeconds() + " + orders.paymentHoldSeconds "
          + orders.paymentHoldSeconds() + " seconds): a create retried while its order is open would make a second "
          + "order; set at least " + (longestDeadlineSeconds + 3599) / 3600);
    }
    return keyHours;
  }

  private static final List<String> CLIENT_LIMITS =
      List.of("maxUnpaidOrders", "maxReservedUnits", "maxTimeoutSeconds", "createsPerSecond", "createsBurst");

  /**
   * The defaults under {@code clients.default}, then {@code clients.overrides}: per client of {@code auth.keys}, the
   * limits that differ from the defaults. A timeout ceiling lies between the longest category timeout (a create that
   * names no timeout is never refused) and {@code orders.maxTimeoutSeconds}.
   */
  private static Clients clients(ConfigSource source, Orders orders, List<ApiKey> keys) {
    int lowestCeiling = Math.max(Collections.max(orders.categoryTimeoutSeconds().values()), orders.minTimeoutSeconds());
    int highestCeiling = orders.maxTimeoutSeconds();
    ClientLimits builtIn = new ClientLimits(100_000, 1_000_000,
        Math.max(lowestCeiling, Math.min(24 * 3600, highestCeiling)), 1000, 2000);
    ClientLimits defaults = clientLimits("clients.default", name -> source.raw("clients.default." + name), builtIn,
        lowestCeiling, highestCeiling);
    Map<String, ClientLimits> overrides = new LinkedHashMap<>();
    source.map("clients.overrides").forEach((client, value) -> {
      String at = "clients.overrides." + client;
      if (keys.stream().noneMatch(key -> key.client().equals(client))) {
        throw new ConfigException(at, "no auth.keys entry has client '" + client + "'");
      }
      if (!(value instanceof Map<?, ?> entry)) {
        throw new ConfigException(at, "expected a mapping of some of " + String.join(", ", CLIENT_LIMITS) + ", found " + value);
      }
      for (Object name : entry.keySet()) {
        if (!CLIENT_LIMITS.contains(String.valueOf(name))) {
          throw new ConfigException(at + "." + name, "not a client limit; expected one of " + String.join(", ", CLIENT_LIMITS));
        }
      }
      overrides.put(client, clientLimits(at, name -> entry.get(name), defaults, lowestCeiling, highestCeiling));
    });
    return new Clients(defaults, Map.copyOf(overrides));
  }

  /** The limits under {@code at}, each read by {@code value} (null when absent: then {@code fallback}'s). */
  private static ClientLimits clientLimits(String at, Function<String, Object> value, ClientLimits fallback, int lowestCeiling,
                                           int highestCeiling) {
    return new ClientLimits(
        limit(at, "maxUnpaidOrders", value, fallback.maxUnpaidOrders(), 1, Long.MAX_VALUE),
        limit(at, "maxReservedUnits", value, fallback.maxReservedUnits(), 1, Long.MAX_VALUE),
        (int) limit(at, "maxTimeoutSeconds", value, fallback.maxTimeoutSeconds(), lowestCeiling, highestCeiling),
        (int) limit(at, "createsPerSecond", value, fallback.createsPerSecond(), 0, 10_000_000),
        (int) limit(at, "createsBurst", value, fallback.createsBurst(), 1, 10_000_000));
  }

  private static long limit(String at, String name, Function<String, Object> values, long fallback, long min, long max) {
    Object value = values.apply(name);
    if (value == null) {
      return fallback;
    }
    if (!(value instanceof Integer || value instanceof Long) || ((Number) value).longValue() < min || ((Number) value).longValue() > max) {
      throw new ConfigException(at + "." + name, "expected a whole number in [" + min + ", " + max + "], found " + value);
    }
    return ((Number) value).longValue();
  }

  /**
   * Without the key, JSON: a config file written for a deployment gets what log shippers parse. The
   * embedded default (conf/application.yaml) asks for text, because it is what runs in a terminal.
   */
  private static final Pattern TIME_OF_DAY = Pattern.compile("([01][0-9]|2[0-3]):[0-5][0-9]");

  private static Reconciliation reconciliation(ConfigSource source) {
    int intervalHours = source.integer("reconciliation.intervalHours", 24, 1, 24 * 365);
    // YAML 1.1 reads an unquoted 03:00 (and an environment variable's 03:00) as the base-60 number 180: read it back
    // and an unquoted off as false
    Object raw = source.raw("reconciliation.at");
    String at = raw instanceof Number minutes && minutes.longValue() >= 0 && minutes.longValue() < 24 * 60
        ? String.format(Locale.ROOT, "%02d:%02d", minutes.longValue() / 60, minutes.longValue() % 60)
        : Boolean.FALSE.equals(raw) ? "" : source.string("reconciliation.at", "03:00").trim();
    if (at.equalsIgnoreCase("off")) {
      at = "";
    }
    if (!at.isEmpty() && !TIME_OF_DAY.matcher(at).matches()) {
      throw new ConfigException("reconciliation.at", "expected a time of day HH:MM (\"03:00\"), or off for every "
          + "reconciliation.intervalHours instead, found '" + at + "'");
    }
    String zone = source.string("reconciliation.zone", "UTC").trim();
    ZoneId zoneId;
    try {
      zoneId = ZoneId.of(zone);
    } catch (DateTimeException e) {
      throw new ConfigException("reconciliation.zone", "expected a time zone such as UTC or Europe/Berlin, found '" + zone + "'");
    }
    return new Reconciliation(intervalHours, at.isEmpty() ? null : LocalTime.parse(at), zoneId);
  }

  private static Logging logging(ConfigSource source) {
    String format = source.string("logging.format", "json").trim().toUpperCase(Locale.ROOT);
    LogFormat logFormat;
    try {
      logFormat = LogFormat.valueOf(format);
    } catch (IllegalArgumentException e) {
      throw new ConfigException("logging.format", "expected json or text, found '" + source.string("logging.format", "") + "'");
    }
    String configuredRoot = source.string("logging.level", null);
    String root = configuredRoot == null ? null : logLevel("logging.level", configuredRoot);
    Map<String, String> levels = new LinkedHashMap<>();
    source.map("logging.levels").forEach((logger, level) -> {
      String key = "logging.levels." + logger;
      if (logger == null || logger.isBlank()) {
        throw new ConfigException("logging.levels", "a logger name is required");
      }
      if (level == null || level instanceof Map || level instanceof List) {
        throw new ConfigException(key, "expected one of " + LOG_LEVEL_NAMES + ", found " + level);
      }
      levels.put(logger, logLevel(key, level.toString()));
    });
    return new Logging(logFormat, root, Collections.unmodifiableMap(levels));
  }

  private static Redis redis(ConfigSource source) {
    String url = source.string("redis.url", "").trim();
    if (!url.isEmpty()) {
      URI uri;
      try {
        uri = new URI(url);
      } catch (URISyntaxException e) {
        throw new ConfigException("redis.url", "not a URL: " + Secrets.withoutPasswords(e.getMessage()));
      }
      String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
      if (!scheme.equals("redis") && !scheme.equals("rediss") && !scheme.equals("unix")) {
        throw new ConfigException("redis.url", "expected redis://[user:password@]host[:port][/db], rediss://... or unix://..., "
            + "found a URL of scheme '" + scheme + "'");
      }
      if (!scheme.equals("unix") && (uri.getHost() == null || uri.getHost().isBlank())) {
        throw new ConfigException("redis.url", "a host is required, as in redis://127.0.0.1:6379");
      }
    }
    String prefix = source.string("redis.keyPrefix", "ot");
    if (!prefix.matches("[A-Za-z0-9_.:-]{1,64}")) {
      throw new ConfigException("redis.keyPrefix", "1 to 64 letters, digits or _ . : -, found '" + prefix + "'");
    }
    String policy = source.string("redis.whenUnreachable", "local").trim().toUpperCase(Locale.ROOT);
    WhenUnreachable whenUnreachable;
    try {
      whenUnreachable = WhenUnreachable.valueOf(policy);
    } catch (IllegalArgumentException e) {
      throw new ConfigException("redis.whenUnreachable", "expected local or deny, found '" + source.string("redis.whenUnreachable", "") + "'");
    }
    return new Redis(
        url,
        prefix,
        source.integer("redis.timeoutMillis", 100, 1, 60_000),
        whenUnreachable,
        source.integer("redis.lockTtlSeconds", 30, 1, 24 * 3600));
  }

  private static Events events(ConfigSource source, List<ApiKey> keys) {
    List<Webhook> webhooks = new ArrayList<>();
    List<?> entries = source.list("webhooks");
    for (int i = 0; i < entries.size(); i++) {
      String at = "webhooks[" + i + "]";
      if (!(entries.get(i) instanceof Map<?, ?> entry)) {
        throw new ConfigException(at, "expected {url, secret, types?, client?}");
      }
      for (Object name : entry.keySet()) {
        if (!Set.of("url", "secret", "types", "client").contains(String.valueOf(name))) {
          throw new ConfigException(at + "." + name, "unknown; expected url, secret, types, client");
        }
      }
      String url = entry.get("url") == null ? "" : entry.get("url").toString().trim();
      URI uri;
      try {
        uri = new URI(url);
      } catch (URISyntaxException e) {
        throw new ConfigException(at + ".url", "not a URL: " + Secrets.withoutPasswords(e.getMessage()));
      }
      String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
      if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
        throw new ConfigException(at + ".url", "expected http(s)://host[:port]/path");
      }
      if (webhooks.stream().anyMatch(w -> w.url().equals(url))) {
        throw new ConfigException(at + ".url", "the same url is configured twice");
      }
      Object secret = entry.get("secret");
      if (secret == null || secret.toString().length() < 16) {
        throw new ConfigException(at + ".secret", "a secret of at least 16 characters is required");
      }
      Set<String> types = new java.util.LinkedHashSet<>();
      Object typeList = entry.get("types");
      if (typeList != null) {
        if (!(typeList instanceof List<?> list)) {
          throw new ConfigException(at + ".types", "expected a list of event types");
        }
        for (Object type : list) {
          if (!EVENT_TYPES.contains(String.valueOf(type))) {
            throw new ConfigException(at + ".types", "'" + type + "' is not one of " + String.join(", ", new java.util.TreeSet<>(EVENT_TYPES)));
          }
          types.add(String.valueOf(type));
        }
      }
      Object client = entry.get("client");
      if (client != null && keys.stream().noneMatch(key -> key.client().equals(client.toString()))) {
        throw new ConfigException(at + ".client", "no auth.keys entry has client '" + client + "'");
      }
      webhooks.add(new Webhook(url, secret.toString(), Set.copyOf(types), client == null ? null : client.toString()));
    }
    int backoffMin = source.integer("events.backoffMinMillis", 1000, 10, 3_600_000);
    return new Events(
        List.copyOf(webhooks),
        source.integer("events.dispatchIntervalMillis", 100, 1, 60_000),
        source.integer("events.dispatchWhileClosesWaitMillis", 1000, 0, 60_000),
        source.integer("events.batchSize", 1000, 1, 100_000),
        source.integer("events.timeoutMillis", 10_000, 100, 300_000),
        source.integer("events.retrySeconds", 24 * 3600, 1, 30 * 24 * 3600),
        backoffMin,
        source.integer("events.backoffMaxMillis", 600_000, backoffMin, 24 * 3_600_000),
        source.integer("events.maxInFlight", 32, 1, 10_000));
  }

  private static String logLevel(String key, String value) {
    // YAML reads a bare OFF as the boolean false
    String level = "false".equalsIgnoreCase(value) ? "OFF" : value.trim().toUpperCase(Locale.ROOT);
    if (!LOG_LEVELS.contains(level)) {
      throw new ConfigException(key, "expected one of " + LOG_LEVEL_NAMES + ", found '" + value + "'");
    }
    return level;
  }

  /** A request is answered 504 only once it could have started: past its deadline in the queue it answers 503. */
  private void requireAnswerAfterDeadline() {
    if (intake.answerWithinMillis() <= intake.requestDeadlineMillis()) {
      throw new ConfigException("intake.answerWithinMillis", "must be longer than intake.requestDeadlineMillis ("
          + intake.requestDeadlineMillis() + "), not " + intake.answerWithinMillis());
    }
  }

  /**
   * While a partition's DDL waits for its lock on orders, every statement on orders that comes after it waits behind
   * it: past the intake's own lock wait, every create, pay and read of the node would fail ({@code row_locked}).
   */
  private void requirePartitionLockWaitShorterThanIntakes() {
    int partitionWait = retention.partitions().lockTimeoutMillis();
    if (partitionWait >= database.intake().lockTimeoutMillis()) {
      throw new ConfigException("retention.partitionLockTimeoutMillis", "must be shorter than "
          + "database.intake.lockTimeoutMillis (" + database.intake().lockTimeoutMillis() + "), not " + partitionWait
          + ": requests on orders wait behind a partition's DDL while it waits for its lock");
    }
  }

  private void refuseDevKeysOffLoopback() {
    boolean devKeys = apiKeys.stream().anyMatch(k -> DEV_KEYS.contains(k.key()));
    if (devKeys && !isLoopback(http.host())) {
      throw new ConfigException("http.host",
          "the development keys (dev-user-key, dev-admin-key) are only allowed on a loopback address, not " + http.host());
    }
  }

  private static boolean isLoopback(String host) {
    try {
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (UnknownHostException e) {
      throw new ConfigException("http.host", "cannot resolve " + host);
    }
  }
}
