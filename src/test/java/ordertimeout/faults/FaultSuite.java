package ordertimeout.faults;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ordertimeout.faults.Recording.Outcome;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The fault suite (docs/faults.md): every scenario in turn on one three-node cluster, each with SKUs and users of its
 * own, then the table of figures. Fails when a must-be-zero figure is not zero or a bound was exceeded.
 * <pre>
 * mvn -B test-compile exec:java -Dexec.classpathScope=test -Dmain.class=ordertimeout.faults.FaultSuite \
 *     [-Dfaults.seed=N] [-Dfaults.scenarios=baseline,database-crash]
 * </pre>
 * The seed draws every scenario's operations (printed; the same seed replays the same requests at the same times).
 */
public final class FaultSuite {
  private static final int WARM_UP_SECONDS = 5;
  /** A warm-up rate that leaves the warm-up out: for a run whose waits and lateness are printed, not asserted. */
  static final int NO_WARM_UP = 0;

  private FaultSuite() {}

  /** The figures of the scenarios run, and a line for each scenario not run. */
  record Report(long seed, List<Figures> figures, List<String> notRun) {
    String table() {
      return Figures.table(figures, notRun);
    }

    boolean passed() {
      return figures.stream().allMatch(row -> row.violations().isEmpty());
    }
  }

  public static void main(String[] args) {
    long seed = Long.getLong("faults.seed", new Random().nextLong());
    String chosen = System.getProperty("faults.scenarios", "");
    Set<String> names = chosen.isBlank() ? Set.of() : Set.copyOf(Arrays.asList(chosen.split(",")));
    List<Scenario> scenarios = FaultScenarios.all().stream().filter(scenario -> names.isEmpty() || names.contains(scenario.name())).toList();
    Report report = run(scenarios, seed, FaultScenarios.BASE_RATE);
    System.out.println(report.table());
    if (!report.passed()) {
      throw new AssertionError("the fault suite found: " + report.figures().stream().filter(row -> !row.violations().isEmpty())
          .map(row -> row.scenario() + " " + row.violations()).collect(Collectors.joining("; ")) + " (seed " + seed + ")");
    }
  }

  static Report run(List<Scenario> scenarios, long seed, int warmUpRate) {
    System.out.printf("fault suite: seed %d (-Dfaults.seed=%d replays it), scenarios %s%n", seed, seed,
        scenarios.stream().map(Scenario::name).toList());
    List<Figures> figures = new ArrayList<>();
    List<String> notRun = new ArrayList<>();
    Logger kafkaClients = (Logger) LoggerFactory.getLogger("org.apache.kafka");
    // null when inherited: set back to null, it inherits again
    Level kafkaClientsLevel = kafkaClients.getLevel();
    // The checker's consumer of the events topic logs every partition it seeks at INFO.
    kafkaClients.setLevel(Level.WARN);
    try (FaultCluster cluster = FaultCluster.start()) {
      OpenLoad load = new OpenLoad();
      FaultChecker checker = new FaultChecker(cluster);
      if (warmUpRate != NO_WARM_UP) {
        warmUp(cluster, load, seed, warmUpRate);
      }
      for (Scenario scenario : scenarios) {
        if (scenario.fault() instanceof FaultScenarios.ClockSkew && !FaultScenarios.clockInjectable()) {
          notRun.add(scenario.name() + ": needs node." + FaultScenarios.CLOCK_OFFSET_KEY + " (OT_NODE_CLOCK_OFFSET_MILLIS)");
          continue;
        }
        figures.add(runOne(cluster, load, checker, scenario, seed));
      }
    } finally {
      // the classes after the suite in the same JVM log (and count) Kafka's INFO lines as before it
      kafkaClients.setLevel(kafkaClientsLevel);
    }
    return new Report(seed, figures, notRun);
  }

  /** The nodes' code compiled and their pools full before the first figures count: a short run at the base rate, not checked. */
  private static void warmUp(FaultCluster cluster, OpenLoad load, long seed, int rate) {
    String tag = "warm-up";
    cluster.stockUp(tag);
    Recording recording = load.run(LoadPlan.draw(tag, seed, LoadPlan.Shape.steady(rate, WARM_UP_SECONDS)),
        index -> cluster.node(index).port(), FaultCluster.NODES);
    System.out.printf("fault suite: warm-up: last answers %s%n", recording.byAnswer());
  }

  private static Figures runOne(FaultCluster cluster, OpenLoad load, FaultChecker checker, Scenario scenario, long seed) {
    String tag = scenario.name();
    cluster.stockUp(tag);
    scenario.fault().prepare(cluster);
    LoadPlan plan = LoadPlan.draw(tag, seed, scenario.shape());
    System.out.printf("fault suite: %s: %s; %d creates over %d s%n", scenario.name(), scenario.description(), plan.creates().size(),
        scenario.shape().seconds());
    FaultThread fault = new FaultThread(cluster, scenario);
    fault.start();
    Recording recording = load.run(plan, index -> scenario.throughClientProxies()
        ? cluster.clientProxy(index).port() : cluster.node(index).port(), FaultCluster.NODES);
    String injected = fault.awaitHealed();
    String recovered;
    try {
      cluster.awaitReady();
      recovered = "cluster ready again";
    } catch (AssertionError notReady) {
      recovered = "CLUSTER NOT READY AGAIN: " + notReady.getMessage();
    }
    Figures figures = checker.check(scenario.name(), plan, recording, scenario.bounds());
    Map<String, Long> violations = figures.violations();
    System.out.printf("fault suite: %s: %s; %s; last answers %s; %d operations took more than one request; ok %d, failed %d, "
            + "unknown %d; slowest %s; %s; %s%n", scenario.name(), injected, recovered, recording.byAnswer(), recording.retried(),
        recording.count(Outcome.OK), recording.count(Outcome.FAILED), recording.count(Outcome.UNKNOWN),
        recording.slowest().map(Object::toString).orElse("none"), recording.sendingFigures(),
        violations.isEmpty() ? figures.verdict() : "FAIL " + violations);
    scenario.fault().undo(cluster);
    return figures;
  }

  /** Injects a scenario's fault at its moment into the load, on a thread of its own. */
  private static final class FaultThread extends Thread {
    private final FaultCluster cluster;
    private final Scenario scenario;
    private volatile String result = "no fault";
    private volatile RuntimeException failure;

    FaultThread(FaultCluster cluster, Scenario scenario) {
      super("fault-" + scenario.name());
      this.cluster = cluster;
      this.scenario = scenario;
    }

    @Override
    public void run() {
      try {
        sleep(scenario.faultAtSecond() * 1000L);
        result = scenario.fault().inject(cluster);
      } catch (RuntimeException e) {
        failure = e;
      } catch (InterruptedException e) {
        failure = new IllegalStateException(e);
      }
    }

    String awaitHealed() {
      try {
        join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      if (failure != null) {
        throw failure;
      }
      return result;
    }
  }
}
