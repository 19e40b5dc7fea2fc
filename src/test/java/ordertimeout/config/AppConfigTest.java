package ordertimeout.config;

import ordertimeout.store.DatabaseSetup;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AppConfigTest {
  @TempDir
  Path tempDir;

  private static AppConfig load(Map<String, String> environment) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
  }

  @Test
  void embeddedDefaultIsLoopbackWithDevKeysAndTheAgreedPolicy() {
    AppConfig config = load(Map.of());
    assertThat(config.http().host()).isEqualTo("127.0.0.1");
    assertThat(config.http().port()).isEqualTo(8080);
    assertThat(config.database().embedded()).isTrue();
    assertThat(config.database().shards()).isEqualTo(64);
    assertThat(config.apiKeys()).extracting(AppConfig.ApiKey::key).containsExactlyInAnyOrder("dev-user-key", "dev-admin-key");
    assertThat(config.orders().categoryTimeoutSeconds()).containsEntry("virtual", 300).containsEntry("physical", 1800);
    assertThat(config.orders().defaultCategory()).isEqualTo("physical");
    assertThat(config.orders().reminderBeforeSeconds()).isEqualTo(300);
    assertThat(config.limits().closesPerSecond()).as("closes uncapped by default").isZero();
  }

  @Test
  void thePaymentHoldAndTheReopenOfLatePaysAreReadAndChecked() {
    AppConfig defaults = load(Map.of());
    assertThat(defaults.orders().paymentHoldSeconds()).isEqualTo(600);
    assertThat(defaults.orders().reopenOnLatePayment()).isFalse();
    AppConfig set = load(Map.of("OT_ORDERS_PAYMENT_HOLD_SECONDS", "30", "OT_ORDERS_REOPEN_ON_LATE_PAYMENT", "true"));
    assertThat(set.orders().paymentHoldSeconds()).isEqualTo(30);
    assertThat(set.orders().reopenOnLatePayment()).isTrue();
    assertThatThrownBy(() -> load(Map.of("OT_ORDERS_PAYMENT_HOLD_SECONDS", "0")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("orders.paymentHoldSeconds");
    assertThatThrownBy(() -> load(Map.of("OT_ORDERS_REOPEN_ON_LATE_PAYMENT", "sometimes")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("orders.reopenOnLatePayment");
  }

  @Test
  void everyDatabaseWaitIsBoundedByDefaultAndTheNestedPoolKeysAreRead() {
    AppConfig config = load(Map.of());
    assertThat(config.database().intake()).isEqualTo(new AppConfig.PoolWaits(1000, 5000, 128));
    assertThat(config.database().deadlines()).isEqualTo(new AppConfig.PoolWaits(10_000, 30_000, AppConfig.PoolWaits.UNBOUNDED));
    assertThat(config.database().background()).isEqualTo(new AppConfig.PoolWaits(10_000, 300_000, AppConfig.PoolWaits.UNBOUNDED));
    assertThat(config.database().idleInTransactionTimeoutMillis()).isEqualTo(10_000);
    assertThat(config.intake()).isEqualTo(new AppConfig.Intake(256, 1, 1024, 5000, 3000, 10_000, 200_000));
    assertThat(config.health().databaseTimeoutMillis()).isEqualTo(1000);

    assertThat(load(Map.of("OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "250")).database().intake().lockTimeoutMillis()).isEqualTo(250);
    assertThatThrownBy(() -> load(Map.of("OT_DATABASE_DEADLINES_STATEMENT_TIMEOUT_MILLIS", "0")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("database.deadlines.statementTimeoutMillis");
    assertThatThrownBy(() -> load(Map.of("OT_INTAKE_MAX_QUEUED", "0")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("intake.maxQueued");
    assertThat(config.retention().partitions().lockTimeoutMillis()).as("a partition's DDL waits less than a request")
        .isLessThan(config.database().intake().lockTimeoutMillis());
    assertThatThrownBy(() -> load(Map.of("OT_RETENTION_PARTITION_LOCK_TIMEOUT_MILLIS", "1000")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("retention.partitionLockTimeoutMillis")
        .hasMessageContaining("database.intake.lockTimeoutMillis");
  }

  @Test
  void everyKeyCanBeOverriddenFromTheEnvironment() {
    assertThat(ConfigSource.environmentVariable("orders.maxUnpaidPerUser")).isEqualTo("OT_ORDERS_MAX_UNPAID_PER_USER");
    AppConfig config = load(Map.of(
        "OT_HTTP_PORT", "9090",
        "OT_ORDERS_MAX_UNPAID_PER_USER", "7",
        "OT_ORDERS_CATEGORIES", "{virtual: 60, physical: 900, fresh: 120}",
        "OT_AUTH_KEYS", "[{key: a-long-user-key, role: user, client: shop-1}]"));
    assertThat(config.http().port()).isEqualTo(9090);
    assertThat(config.orders().maxUnpaidPerUser()).isEqualTo(7);
    assertThat(config.orders().categoryTimeoutSeconds()).containsEntry("fresh", 120);
    assertThat(config.apiKeys()).containsExactly(new AppConfig.ApiKey("a-long-user-key", AppConfig.Role.USER, "shop-1"));
  }

  private AppConfig loadText(String yaml) throws IOException {
    Path file = Files.createTempFile(tempDir, "application", ".yaml");
    Files.writeString(file, yaml);
    return AppConfig.from(ConfigSource.load(file, name -> null));
  }

  @Test
  void aKeyNoSettingReadsStopsTheServiceNamingIt() throws IOException {
    for (String profile : List.of("conf/application.yaml", "conf/local.yaml", "conf/cluster.yaml")) {
      assertThat(AppConfig.from(ConfigSource.load(Path.of(profile), Map.<String, String>of()::get)))
          .as("every key of %s is a setting", profile).isNotNull();
    }
    String packaged = Files.readString(Path.of("conf/application.yaml"));
    assertThatThrownBy(() -> loadText(packaged.replace("  batchSize: 1000            # the oldest rows",
        "  batchSzie: 1000            # the oldest rows")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("retention.batchSzie")
        .hasMessageContaining("not a setting");
    assertThatThrownBy(() -> loadText(packaged.replace("    createsPerSecond: 1000", "    createsPerSecnd: 1000")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("clients.default.createsPerSecnd");
  }

  @Test
  void aWrongValueStopsTheServiceNamingTheKey() {
    assertThatThrownBy(() -> load(Map.of("OT_HTTP_PORT", "eighty"))).isInstanceOf(ConfigException.class).hasMessageContaining("http.port");
    assertThatThrownBy(() -> load(Map.of("OT_HTTP_PORT", "70000"))).hasMessageContaining("http.port");
    assertThatThrownBy(() -> load(Map.of("OT_ORDERS_DEFAULT_CATEGORY", "nope"))).hasMessageContaining("orders.defaultCategory");
    assertThatThrownBy(() -> load(Map.of("OT_ORDERS_CATEGORIES", "{virtual: 0}"))).hasMessageContaining("orders.categories.virtual");
    assertThatThrownBy(() -> load(Map.of("OT_AUTH_KEYS", "[{key: short, role: user, client: c}]"))).hasMessageContaining("auth.keys[0].key");
    assertThatThrownBy(() -> load(Map.of("OT_AUTH_KEYS", "[{key: long-enough-key, role: root, client: c}]"))).hasMessageContaining("auth.keys[0].role");
    assertThatThrownBy(() -> load(Map.of("OT_TIMER_TICK_MILLIS", "50"))).hasMessageContaining("timer.tickMillis");
  }

  @Test
  void everyClientHasDefaultLimitsAndAnOverrideChangesOnlyWhatItNames() {
    AppConfig config = load(Map.of("OT_CLIENTS_OVERRIDES", "{dev-user: {maxUnpaidOrders: 5, createsPerSecond: 0}}"));
    AppConfig.ClientLimits defaults = new AppConfig.ClientLimits(100_000, 1_000_000, 86_400, 1000, 2000);
    assertThat(config.clients().of("dev-admin")).as("the defaults, the create rate on").isEqualTo(defaults);
    assertThat(config.clients().of("dev-user")).isEqualTo(new AppConfig.ClientLimits(5, 1_000_000, 86_400, 0, 2000));
  }

  @Test
  void aWrongClientLimitStopsTheServiceNamingTheKey() {
    assertThatThrownBy(() -> load(Map.of("OT_CLIENTS_OVERRIDES", "{nobody: {maxUnpaidOrders: 5}}")))
        .hasMessageContaining("clients.overrides.nobody").hasMessageContaining("no auth.keys entry");
    assertThatThrownBy(() -> load(Map.of("OT_CLIENTS_OVERRIDES", "{dev-user: {maxUnpaid: 5}}")))
        .hasMessageContaining("clients.overrides.dev-user.maxUnpaid").hasMessageContaining("not a client limit");
    assertThatThrownBy(() -> load(Map.of("OT_CLIENTS_OVERRIDES", "{dev-user: {maxReservedUnits: 0}}")))
        .hasMessageContaining("clients.overrides.dev-user.maxReservedUnits");
    assertThatThrownBy(() -> load(Map.of("OT_CLIENTS_OVERRIDES", "{dev-user: 5}"))).hasMessageContaining("clients.overrides.dev-user");
    assertThatThrownBy(() -> load(Map.of("OT_CLIENTS_DEFAULT_MAX_TIMEOUT_SECONDS", "604801")))
        .as("above orders.maxTimeoutSeconds").hasMessageContaining("clients.default.maxTimeoutSeconds");
    assertThatThrownBy(() -> load(Map.of("OT_CLIENTS_DEFAULT_MAX_TIMEOUT_SECONDS", "1799")))
        .as("below the physical category's 1800 s: a create naming no timeout would be refused")
        .hasMessageContaining("clients.default.maxTimeoutSeconds");
    assertThatThrownBy(() -> load(Map.of("OT_CLIENTS_OVERRIDES", "{dev-user: {maxTimeoutSeconds: 1799}}")))
        .hasMessageContaining("clients.overrides.dev-user.maxTimeoutSeconds");
  }

  @Test
  void kafkaIsOffByDefaultWithTheDocumentedSettings() {
    AppConfig.Kafka kafka = load(Map.of()).kafka();
    assertThat(kafka.enabled()).as("off while kafka.bootstrapServers is empty").isFalse();
    assertThat(kafka.bootstrapServers()).isEmpty();
    assertThat(kafka.timersTopic()).isEqualTo("order-timers");
    assertThat(kafka.eventsTopic()).isEqualTo("order-events");
    assertThat(kafka.groupId()).isEqualTo("order-timeout");
    assertThat(kafka.replicationFactor()).isEqualTo(3);
    assertThat(kafka.sessionTimeoutMillis()).isEqualTo(10_000);
    assertThat(kafka.relayIntervalMillis()).isEqualTo(100);
    assertThat(kafka.relayBatchSize()).isEqualTo(1000);
    assertThat(kafka.deliveryTimeoutMillis()).isEqualTo(15_000);
    assertThat(kafka.readyWithoutBroker()).isFalse();
    assertThat(load(Map.of("OT_KAFKA_BOOTSTRAP_SERVERS", "  ")).kafka().enabled()).as("blank counts as empty").isFalse();
  }

  @Test
  void everyKafkaKeyCanBeOverriddenFromTheEnvironment() {
    assertThat(ConfigSource.environmentVariable("kafka.bootstrapServers")).isEqualTo("OT_KAFKA_BOOTSTRAP_SERVERS");
    AppConfig.Kafka kafka = load(Map.of(
        "OT_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092,127.0.0.1:9093",
        "OT_KAFKA_TIMERS_TOPIC", "timers-a",
        "OT_KAFKA_EVENTS_TOPIC", "events-a",
        "OT_KAFKA_GROUP_ID", "group-a",
        "OT_KAFKA_REPLICATION_FACTOR", "2",
        "OT_KAFKA_SESSION_TIMEOUT_MILLIS", "6000",
        "OT_KAFKA_RELAY_INTERVAL_MILLIS", "50",
        "OT_KAFKA_RELAY_BATCH_SIZE", "200",
        "OT_KAFKA_DELIVERY_TIMEOUT_MILLIS", "3000",
        "OT_KAFKA_READY_WITHOUT_BROKER", "true")).kafka();
    assertThat(kafka).isEqualTo(new AppConfig.Kafka("127.0.0.1:9092,127.0.0.1:9093", "timers-a", "events-a", "group-a",
        2, 6000, 50, 200, 3000, true));
    assertThat(kafka.enabled()).isTrue();
  }

  @Test
  void anOutOfRangeKafkaValueStopsTheServiceNamingTheKey() {
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_SESSION_TIMEOUT_MILLIS", "5999")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("kafka.sessionTimeoutMillis");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_SESSION_TIMEOUT_MILLIS", "300001"))).hasMessageContaining("kafka.sessionTimeoutMillis");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_REPLICATION_FACTOR", "0"))).hasMessageContaining("kafka.replicationFactor");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_REPLICATION_FACTOR", "17"))).hasMessageContaining("kafka.replicationFactor");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_RELAY_INTERVAL_MILLIS", "0"))).hasMessageContaining("kafka.relayIntervalMillis");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_RELAY_BATCH_SIZE", "0"))).hasMessageContaining("kafka.relayBatchSize");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_RELAY_BATCH_SIZE", "100001"))).hasMessageContaining("kafka.relayBatchSize");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_DELIVERY_TIMEOUT_MILLIS", "999"))).hasMessageContaining("kafka.deliveryTimeoutMillis");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_DELIVERY_TIMEOUT_MILLIS", "soon")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("kafka.deliveryTimeoutMillis");
    assertThatThrownBy(() -> load(Map.of("OT_KAFKA_READY_WITHOUT_BROKER", "soon")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("kafka.readyWithoutBroker");
  }

  @Test
  void devKeysAreRefusedOffLoopback() {
    assertThatThrownBy(() -> load(Map.of("OT_HTTP_HOST", "0.0.0.0"))).hasMessageContaining("http.host").hasMessageContaining("dev");
    AppConfig production = load(Map.of(
        "OT_HTTP_HOST", "0.0.0.0",
        "OT_AUTH_KEYS", "[{key: a-real-secret-key, role: admin, client: ops}]"));
    assertThat(production.http().host()).isEqualTo("0.0.0.0");
  }

  @Test
  void theServiceRefusesADifferentShardCountThanTheDatabaseWasCreatedWith() {
    String url = TestDatabase.url();
    assertThatThrownBy(() -> DatabaseSetup.prepare(TestDatabase.databaseConfig(Map.of("OT_DATABASE_URL", url, "OT_DATABASE_SHARDS", "32"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("database.shards")
        .hasMessageContaining("64");
    DatabaseSetup.prepare(TestDatabase.databaseConfig(Map.of("OT_DATABASE_URL", url))).close();
  }

  @Test
  void theWebhooksFingerprintChangesWithWhatDecidesTheDeliveriesOnly() {
    AppConfig.Webhook paid = new AppConfig.Webhook("http://a/hook", "s1", Set.of("ORDER_PAID", "ORDER_CLOSED"), null);
    AppConfig.Webhook shop = new AppConfig.Webhook("http://b/hook", "s2", Set.of(), "shop-1");
    String fingerprint = events(paid, shop).webhooksFingerprint();

    assertThat(events(shop, paid).webhooksFingerprint()).as("another order").isEqualTo(fingerprint);
    AppConfig.Webhook rotated =
        new AppConfig.Webhook("http://a/hook", "s3", Set.of("ORDER_CLOSED", "ORDER_PAID"), null);
    assertThat(events(rotated, shop).webhooksFingerprint()).as("another secret, types listed otherwise")
        .isEqualTo(fingerprint);

    assertThat(events(paid).webhooksFingerprint()).as("one fewer").isNotEqualTo(fingerprint);
    assertThat(events(paid, new AppConfig.Webhook("http://c/hook", "s2", Set.of(), "shop-1")).webhooksFingerprint())
        .as("another url").isNotEqualTo(fingerprint);
    assertThat(events(paid, new AppConfig.Webhook("http://b/hook", "s2", Set.of("ORDER_PAID"), "shop-1"))
        .webhooksFingerprint()).as("other types").isNotEqualTo(fingerprint);
    assertThat(events(paid, new AppConfig.Webhook("http://b/hook", "s2", Set.of(), null)).webhooksFingerprint())
        .as("another client").isNotEqualTo(fingerprint);
    assertThat(events().webhooksFingerprint()).as("none").isNotEqualTo(fingerprint).hasSize(64);
  }

  private static AppConfig.Events events(AppConfig.Webhook... webhooks) {
    return new AppConfig.Events(List.of(webhooks), 100, 1000, 500, 5000, 3600, 100, 60_000, 32);
  }
}
