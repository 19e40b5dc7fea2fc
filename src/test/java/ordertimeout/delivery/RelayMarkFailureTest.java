package ordertimeout.delivery;

import ordertimeout.metrics.Meters;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.EventsTopic;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The relay fails between the broker's acknowledgement and moving its mark past the events (the mark's
 * UPDATE raises, once): its transaction rolls back, the events stay unpublished and go out again on the
 * next try. At least once: every outbox event reaches the topic, those of the failed try twice, and
 * every row ends published.
 */
class RelayMarkFailureTest {
  private static final String SKU = "SKU-MARK";
  private static final Duration SAFETY = Duration.ofSeconds(60);

  @AfterEach
  void dropInjectedFailure() {
    Sql.executeDdl("DROP TRIGGER IF EXISTS inject_mark_failure ON outbox_relayed");
    Sql.execute("DROP FUNCTION IF EXISTS inject_mark_failure()");
    Sql.execute("DROP SEQUENCE IF EXISTS inject_mark_failure_rows");
  }

  @Test
  void eventsAcknowledgedButNotMarkedPublishedArePublishedAgainAndNoneIsLost() {
    TestDatabase.reset();
    // A sequence is not rolled back with the transaction: the first move of the mark raises, no other.
    Sql.execute("CREATE SEQUENCE inject_mark_failure_rows");
    Sql.execute("""
        CREATE FUNCTION inject_mark_failure() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.last_position > OLD.last_position AND nextval('inject_mark_failure_rows') = 1 THEN
            RAISE EXCEPTION 'injected failure moving the relay mark';
          END IF;
          RETURN NEW;
        END $$""");
    Sql.executeDdl("CREATE TRIGGER inject_mark_failure BEFORE UPDATE ON outbox_relayed FOR EACH ROW EXECUTE FUNCTION inject_mark_failure()");

    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    try (TestService node = TestService.start(cluster.forNode(51))) {
      long failuresBefore = counter(node, Meters.OUTBOX_RELAY_FAILURES);
      node.api().setStock(SKU, 1000);
      List<String> ids = node.api().createOrders(30, 600, SKU);
      for (String id : ids.subList(0, 10)) {
        assertThat(node.api().pay(id).status()).isEqualTo(200);
      }
      Await.until("every outbox row published", SAFETY,
          () -> Sql.count("SELECT count(*) FROM outbox o WHERE " + Sql.unpublished("o")) == 0);
      assertThat(Sql.count("SELECT count(*) FROM outbox")).as("30 created, 10 paid").isEqualTo(40);
      assertThat(Sql.count("SELECT last_value FROM inject_mark_failure_rows")).as("the injected failure fired").isPositive();
      long failures = counter(node, Meters.OUTBOX_RELAY_FAILURES) - failuresBefore;
      assertThat(failures).as("the failed try counted").isGreaterThanOrEqualTo(1);

      List<EventsTopic.Event> events = EventsTopic.readAll(cluster.bootstrapServers(), cluster.eventsTopic());
      Map<Long, Long> timesPublished = events.stream().collect(Collectors.groupingBy(EventsTopic.Event::eventId, Collectors.counting()));
      Set<Long> outbox = Sql.rows("SELECT event_id FROM outbox").stream()
          .map(row -> ((Number) row.get("event_id")).longValue()).collect(Collectors.toSet());
      assertThat(timesPublished.keySet()).as("every outbox event on the topic, none lost, nothing else").isEqualTo(outbox);
      Set<Long> twice = timesPublished.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey)
          .collect(Collectors.toSet());
      assertThat(twice).as("the events of the try acknowledged but not marked went out again").isNotEmpty();
      assertThat(timesPublished.values()).as("at most once more per failed try").allMatch(times -> times <= 1 + failures);
      System.out.printf("RelayMarkFailureTest: %d outbox rows, %d events on the topic, %d published twice, %d relay failures%n",
          outbox.size(), events.size(), twice.size(), failures);
      Invariants.assertHold();
    }
  }

  private static long counter(TestService node, String name) {
    return (long) node.service().stats().registry().get(name).counter().count();
  }
}
