package ordertimeout;

import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A node runs on Netty's epoll transport where the dependency has it, Linux on x86-64 (decision 0028). */
class NativeTransportTest {
  @Test
  void aNodeRunsOnEpollOnLinuxOnX86() {
    assumeTrue("Linux".equals(System.getProperty("os.name")) && "amd64".equals(System.getProperty("os.arch")),
        "the epoll dependency is built for Linux on x86-64 only");
    TestDatabase.resetForANewNode();
    try (TestService node = TestService.start()) {
      assertTrue(node.vertx().isNativeTransportEnabled(),
          () -> "the node runs on Java NIO: " + node.vertx().unavailableNativeTransportCause());
    }
  }
}
