package ordertimeout.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;

/**
 * Free loopback ports for the servers the tests start. The system may hand out a port again as soon
 * as the probing socket closes, before the server that was given it has bound it; so no port is given
 * twice in one test run (a broker's two listeners on one port refuse to start, seen here).
 */
public final class Ports {
  private static final Set<Integer> GIVEN = new HashSet<>();

  private Ports() {}

  public static synchronized int free() {
    for (int attempt = 0; attempt < 100; attempt++) {
      try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        if (GIVEN.add(socket.getLocalPort())) {
          return socket.getLocalPort();
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    throw new IllegalStateException("no free port not given before in 100 tries");
  }
}
