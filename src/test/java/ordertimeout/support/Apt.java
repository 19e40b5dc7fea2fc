package ordertimeout.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Installs a Debian package for a test that needs a program (apt-get update first if the install fails). */
public final class Apt {
  private Apt() {}

  public static void install(String pkg) {
    StringBuilder log = new StringBuilder();
    if (run(log, "install", "-y", pkg) != 0) {
      run(log, "update");
      if (run(log, "install", "-y", pkg) != 0) {
        throw new IllegalStateException("could not install " + pkg + " (as root: apt-get update && apt-get install -y "
            + pkg + "). apt-get said:\n" + log);
      }
    }
  }

  private static int run(StringBuilder log, String... arguments) {
    // the other test JVM may be installing a package too: wait for its lock rather than fail
    List<String> command = new ArrayList<>(List.of("apt-get", "-q", "-o", "DPkg::Lock::Timeout=600"));
    command.addAll(List.of(arguments));
    Path output = null;
    try {
      output = Files.createTempFile("ot-apt", ".log");
      ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile());
      builder.environment().put("DEBIAN_FRONTEND", "noninteractive");
      Process process = builder.start();
      if (!process.waitFor(15, TimeUnit.MINUTES)) {
        process.destroyForcibly();
        log.append(String.join(" ", command)).append(": timed out\n");
        return -1;
      }
      String out = Files.readString(output);
      log.append("$ ").append(String.join(" ", command)).append(" -> ").append(process.exitValue()).append('\n')
          .append(out.length() > 4000 ? out.substring(out.length() - 4000) : out);
      return process.exitValue();
    } catch (IOException e) {
      log.append(String.join(" ", command)).append(": ").append(e).append('\n');
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    } finally {
      TempFolders.delete(output);
    }
  }
}
