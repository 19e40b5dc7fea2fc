package ordertimeout.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

/**
 * POSIX signals to a process the tests started: SIGSTOP freezes it as a long GC pause or a stalled VM would, SIGCONT
 * wakes it; {@link #send} any other (PostgreSQL's postmaster takes SIGQUIT as an immediate shutdown).
 */
public final class Signals {
  private Signals() {}

  public static void stop(long pid) {
    send("STOP", pid);
  }

  public static void resume(long pid) {
    send("CONT", pid);
  }

  /** {@code kill -SIGNAL pid}, {@code signal} without its SIG prefix. */
  public static void send(String signal, long pid) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + signal + " " + pid + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
