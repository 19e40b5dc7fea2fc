package ordertimeout.faults;

/**
 * One fault under load: the load's shape, the fault (injected {@code faultAtSecond} into the load, on a thread of
 * its own, and healed before the load ends), and the bounds the scenario promises.
 */
record Scenario(String name, String description, LoadPlan.Shape shape, int faultAtSecond, Fault fault, Figures.Bounds bounds,
                boolean throughClientProxies) {

  /** What a scenario does to the cluster; {@link #inject} returns once the fault is healed. */
  interface Fault {
    Fault NONE = cluster -> "no fault";

    /** Before the load starts (a node restarted with other settings). */
    default void prepare(FaultCluster cluster) {}

    /** Injects the fault and heals it; returns a line saying what it did, for the report. */
    String inject(FaultCluster cluster);

    /** After the scenario has been checked: the cluster as the next scenario expects it. */
    default void undo(FaultCluster cluster) {}
  }
}
