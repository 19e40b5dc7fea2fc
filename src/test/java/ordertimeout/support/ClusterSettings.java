package ordertimeout.support;

import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

/** OT_* overrides that switch a node to cluster mode on a broker, with topics and a group no other test uses. */
public final class ClusterSettings {
  private final String bootstrapServers;
  private final String suffix = UUID.randomUUID().toString().substring(0, 8);

  public ClusterSettings(String bootstrapServers) {
    this.bootstrapServers = bootstrapServers;
  }

  public String bootstrapServers() {
    return bootstrapServers;
  }

  public String timersTopic() {
    return "order-timers-" + suffix;
  }

  public String eventsTopic() {
    return "order-events-" + suffix;
  }

  public Map<String, String> forNode(int nodeId) {
    Map<String, String> settings = new HashMap<>();
    settings.put("OT_NODE_ID", Integer.toString(nodeId));
    settings.put("OT_KAFKA_BOOTSTRAP_SERVERS", bootstrapServers);
    settings.put("OT_KAFKA_TIMERS_TOPIC", timersTopic());
    settings.put("OT_KAFKA_EVENTS_TOPIC", eventsTopic());
    settings.put("OT_KAFKA_GROUP_ID", "order-timeout-" + suffix);
    settings.put("OT_KAFKA_SESSION_TIMEOUT_MILLIS", "6000");
    settings.put("OT_KAFKA_REPLICATION_FACTOR", "1");
    settings.put("OT_KAFKA_RELAY_INTERVAL_MILLIS", "50");
    return settings;
  }
}
