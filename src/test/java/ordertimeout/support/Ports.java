package ordertimeout.support;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Free loopback ports for the servers the tests start. They are taken below the system's ephemeral range
 * ({@code net.ipv4.ip_local_port_range}): a port from that range, free when probed, can be taken as the local
 * port of an outgoing connection (to PostgreSQL, Kafka, ...) before the server given it binds it (a node of the
 * fault suite failed to start with "Address already in use", seen here). No port is given twice in one test run
 * either (a broker's two listeners on one port refuse to start, seen here). The test JVMs that Maven runs side by side
 * (its {@code forkCount}) each take ports from a slice of their own, so that two cannot probe the same free port and
 * then both bind it.
 */
public final class Ports {
  private static final int LOWEST = 15_000;
  private static final Set<Integer> GIVEN = new HashSet<>();

  private Ports() {}

  public static synchronized int free() {
    int forks = Integer.parseInt(System.getProperty("ot.test.forks", "1")); // a count, not surefire's "1C" form
    int fork = Integer.parseInt(System.getProperty("ot.test.fork", "1")) - 1;
    if (forks < 1 || fork < 0 || fork >= forks) {
      throw new IllegalStateException("test JVM " + (fork + 1) + " of " + forks + ": no slice of ports");
    }
    int slice = (ephemeralRangeStart() - LOWEST) / forks;
    int lowest = LOWEST + fork * slice;
    int below = lowest + slice;
    for (int attempt = 0; attempt < 1000; attempt++) {
      int port = ThreadLocalRandom.current().nextInt(lowest, below);
      if (!GIVEN.contains(port) && bindable(port)) {
        GIVEN.add(port);
        return port;
      }
    }
    throw new IllegalStateException("no free port in [" + lowest + ", " + below + ") in 1000 tries");
  }

  private static boolean bindable(int port) {
    try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return true;
    } catch (IOException taken) {
      return false;
    }
  }

  /** The first port of the ephemeral range; Linux's default when it cannot be read. */
  private static int ephemeralRangeStart() {
    try {
      int start = Integer.parseInt(Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim().split("\\s+")[0]);
      return start > LOWEST + 1000 ? start : 32_768;
    } catch (IOException | RuntimeException unreadable) {
      return 32_768;
    }
  }
}
