package ordertimeout.faults;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fault suite's short form, inside {@code mvn -B test}: the baseline and the client connection cut (creates sent,
 * their answers lost, retried with the same key) on the three-node cluster. Fails when a must-be-zero figure is not
 * zero; the waits and lateness are printed against their bounds, not asserted (time on a shared machine is noisy), so
 * the suite's warm-up, there for those figures, is left out.
 */
class FaultSuiteShortTest {
  @Test
  void theCheapestScenariosLoseNothingAndDoNothingTwice() {
    long seed = Long.getLong("faults.seed", new Random().nextLong());
    Logger kafkaClients = (Logger) LoggerFactory.getLogger("org.apache.kafka");
    Level kafkaClientsLevel = kafkaClients.getLevel();
    FaultSuite.Report report = FaultSuite.run(FaultScenarios.quick(), seed, FaultSuite.NO_WARM_UP);
    assertThat(kafkaClients.getLevel()).as("the Kafka clients' level after the suite, for the classes after it")
        .isEqualTo(kafkaClientsLevel);
    System.out.println(report.table());
    assertThat(report.figures()).hasSize(FaultScenarios.quick().size());
    for (Figures figures : report.figures()) {
      assertThat(figures.ok()).as("%s: operations answered ok", figures.scenario()).isPositive();
      assertThat(figures.nonZero()).as("%s: must-be-zero figures that are not (seed %d)", figures.scenario(), seed).isEmpty();
    }
  }
}
