package ordertimeout.bench;

import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Where the CPU went over a window: this JVM (the service, and the load generator when it runs here), the benchmark's
 * PostgreSQL (its postmaster and every backend, from /proc; of it, the share of its own background processes:
 * autovacuum, checkpointer, writers, and what the postmaster reaped, mostly autovacuum's workers), everything else on
 * the machine (from /proc/stat: anything above a few hundredths of a core means the machine was not quiet and the
 * figures are suspect), this JVM's garbage collections, and its JIT compiler threads (a share of the JVM's figure: more
 * than a few hundredths of a core means the warm-up was too short for the figures to be the warm service's). In cores:
 * CPU seconds per second of the window. Linux only; elsewhere the machine-wide figures read 0.
 */
final class CpuWindow {
  /** How PostgreSQL's background processes title themselves, after "postgres: ". */
  private static final List<String> BACKGROUND_TITLES = List.of("checkpointer", "background writer", "walwriter",
      "autovacuum", "logical replication", "archiver", "walsummarizer", "io worker", "startup", "walreceiver",
      "walsender");
  /** This JVM's threads, one folder each. */
  private static final Path OWN_THREADS = Path.of("/proc/self/task");
  private final long startNanos;
  private final long machineBusyTicks;
  private final long machineTotalTicks;
  private final long jvmCpuNanos;
  private final long gcCount;
  private final long gcMillis;
  private final long postmasterPid;
  private final long postgresTicks;
  private final long postgresBackgroundTicks;
  private final long compilerTicks;

  private CpuWindow(long postmasterPid) {
    this.postmasterPid = postmasterPid;
    long[] postgres = postgresTicks(postmasterPid);
    postgresTicks = postgres[0];
    postgresBackgroundTicks = postgres[1];
    compilerTicks = compilerTicks(OWN_THREADS);
    startNanos = System.nanoTime();
    long[] machine = machineTicks();
    machineBusyTicks = machine[0];
    machineTotalTicks = machine[1];
    jvmCpuNanos = jvmCpuNanos();
    gcCount = ManagementFactory.getGarbageCollectorMXBeans().stream().mapToLong(GarbageCollectorMXBean::getCollectionCount).sum();
    gcMillis = ManagementFactory.getGarbageCollectorMXBeans().stream().mapToLong(GarbageCollectorMXBean::getCollectionTime).sum();
  }

  /** {@code postgresDataDir}: the benchmark's PostgreSQL data directory (its postmaster.pid names the postmaster). */
  static CpuWindow start(Path postgresDataDir) {
    long pid = 0;
    try {
      pid = Long.parseLong(Files.readAllLines(postgresDataDir.resolve("postmaster.pid")).get(0).trim());
    } catch (IOException | RuntimeException e) {
      // no PostgreSQL figure then
    }
    return new CpuWindow(pid);
  }

  record Split(double seconds, double machineCores, double jvmCores, double generatorCores, double compilerCores,
               double postgresCores, double postgresBackgroundCores, double otherCores, double idleCores, long gcCount,
               long gcMillis) {
    /** The same split with the load generator's CPU seconds over the window (it runs in this JVM). */
    Split withGenerator(double generatorCpuSeconds) {
      return new Split(seconds, machineCores, jvmCores, generatorCpuSeconds / seconds, compilerCores, postgresCores,
          postgresBackgroundCores, otherCores, idleCores, gcCount, gcMillis);
    }

    JsonObject toJson() {
      return new JsonObject().put("seconds", Results.round(seconds)).put("machineBusyCores", Results.round(machineCores))
          .put("jvmCores", Results.round(jvmCores)).put("generatorCores", Results.round(generatorCores))
          .put("jitCompilerCores", Results.round(compilerCores))
          .put("postgresCores", Results.round(postgresCores))
          .put("postgresBackgroundCores", Results.round(postgresBackgroundCores))
          .put("otherProcessesCores", Results.round(otherCores))
          .put("idleCores", Results.round(idleCores)).put("gcCount", gcCount).put("gcMillis", gcMillis);
    }
  }

  /** {@code generatorCpuSeconds}: the load generator's own CPU time, when it ran in this JVM (0 otherwise). */
  Split stop(double generatorCpuSeconds) {
    double seconds = (System.nanoTime() - startNanos) / 1e9;
    long[] machine = machineTicks();
    int cores = Runtime.getRuntime().availableProcessors();
    double totalTicks = machine[1] - machineTotalTicks;
    double busyShare = totalTicks <= 0 ? 0 : (machine[0] - machineBusyTicks) / totalTicks;
    double machineCores = busyShare * cores;
    double jvmCores = (jvmCpuNanos() - jvmCpuNanos) / 1e9 / seconds;
    long gcCountNow = ManagementFactory.getGarbageCollectorMXBeans().stream().mapToLong(GarbageCollectorMXBean::getCollectionCount).sum();
    long gcMillisNow = ManagementFactory.getGarbageCollectorMXBeans().stream().mapToLong(GarbageCollectorMXBean::getCollectionTime).sum();
    long[] postgres = postgresTicks(postmasterPid);
    double postgresCores = (postgres[0] - postgresTicks) / TICKS_PER_SECOND / seconds;
    double postgresBackgroundCores = (postgres[1] - postgresBackgroundTicks) / TICKS_PER_SECOND / seconds;
    double compilerCores = (compilerTicks(OWN_THREADS) - compilerTicks) / TICKS_PER_SECOND / seconds;
    return new Split(seconds, machineCores, jvmCores, generatorCpuSeconds / seconds, compilerCores, postgresCores,
        postgresBackgroundCores, Math.max(0, machineCores - jvmCores - postgresCores), cores - machineCores,
        gcCountNow - gcCount, gcMillisNow - gcMillis);
  }

  /** USER_HZ: the unit of /proc's CPU times (100 on every common Linux). */
  static final double TICKS_PER_SECOND = 100;

  /** utime + stime of each process so far, in {@link #TICKS_PER_SECOND}; 0 for one that is gone or unreadable. */
  static long[] processTicks(List<Long> pids) {
    long[] ticks = new long[pids.size()];
    for (int i = 0; i < ticks.length; i++) {
      try {
        ticks[i] = ownTicks(Files.readString(Path.of("/proc", Long.toString(pids.get(i)), "stat")));
      } catch (IOException | RuntimeException gone) {
        ticks[i] = 0;
      }
    }
    return ticks;
  }

  /** utime + stime from a /proc stat line (fields 14 and 15, counted from the pid as 1; the name may hold spaces). */
  private static long ownTicks(String stat) {
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
  }

  /**
   * utime + stime of the postmaster, of its children still running, and of those it has reaped
   * (cutime + cstime): the whole PostgreSQL server's CPU so far; and of that, the postmaster's, its background
   * processes' (a child whose title is not a session's: {@link #isBackground}) and the reaped children's. Sessions
   * stay open through a benchmark (its pools), so what was reaped is mostly autovacuum's workers.
   */
  private static long[] postgresTicks(long postmasterPid) {
    if (postmasterPid <= 0) {
      return new long[] {0, 0};
    }
    long ticks = 0;
    long background = 0;
    try (var processes = Files.list(Path.of("/proc"))) {
      for (Path process : (Iterable<Path>) processes::iterator) {
        String name = process.getFileName().toString();
        if (!name.chars().allMatch(Character::isDigit)) {
          continue;
        }
        try {
          String stat = Files.readString(process.resolve("stat"));
          // fields after "(comm)": state ppid ... utime(14) stime(15) cutime(16) cstime(17), numbered from pid = 1
          String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          long pid = Long.parseLong(name);
          long ppid = Long.parseLong(fields[1]);
          if (pid == postmasterPid) {
            long own = Long.parseLong(fields[11]) + Long.parseLong(fields[12]) + Long.parseLong(fields[13])
                + Long.parseLong(fields[14]);
            ticks += own;
            background += own;
          } else if (ppid == postmasterPid) {
            long own = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
            ticks += own;
            if (isBackground(Files.readString(process.resolve("cmdline")))) {
              background += own;
            }
          }
        } catch (IOException | RuntimeException gone) {
          // the process ended meanwhile
        }
      }
    } catch (IOException e) {
      return new long[] {0, 0};
    }
    return new long[] {ticks, background};
  }

  /** Whether a process title is a background process's ("postgres: checkpointer"), not a session's (its user). */
  private static boolean isBackground(String cmdline) {
    String title = cmdline.startsWith("postgres: ") ? cmdline.substring("postgres: ".length()) : cmdline;
    return BACKGROUND_TITLES.stream().anyMatch(title::startsWith);
  }

  /** {@link #compilerTicks(Path)} of each of these JVMs, summed. */
  static long compilerTicks(List<Long> jvmPids) {
    return jvmPids.stream().mapToLong(pid -> compilerTicks(Path.of("/proc", Long.toString(pid), "task"))).sum();
  }

  /**
   * utime + stime so far of a JVM's JIT compiler threads (HotSpot names them "C1 CompilerThread<n>" and "C2
   * CompilerThread<n>"), in {@link #TICKS_PER_SECOND}, from its /proc task folder; 0 for one that is gone. A compiler
   * thread that HotSpot ended meanwhile takes its ticks along, so this is at least what they spent.
   */
  private static long compilerTicks(Path tasks) {
    long ticks = 0;
    try (var threads = Files.list(tasks)) {
      for (Path thread : (Iterable<Path>) threads::iterator) {
        try {
          String stat = Files.readString(thread.resolve("stat"));
          String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
          if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
            ticks += ownTicks(stat);
          }
        } catch (IOException | RuntimeException gone) {
          // the thread ended meanwhile
        }
      }
    } catch (IOException e) {
      return 0;
    }
    return ticks;
  }

  private static long jvmCpuNanos() {
    return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os ? os.getProcessCpuTime() : 0;
  }

  /** {busy, total} jiffies of all CPUs from the first line of /proc/stat; {0, 0} where there is none. */
  private static long[] machineTicks() {
    try {
      String[] fields = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long total = 0;
      for (int i = 1; i < fields.length && i <= 8; i++) {
        total += Long.parseLong(fields[i]);
      }
      long idle = Long.parseLong(fields[4]) + Long.parseLong(fields[5]);
      return new long[] {total - idle, total};
    } catch (IOException | RuntimeException e) {
      return new long[] {0, 0};
    }
  }
}
