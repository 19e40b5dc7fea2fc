package ordertimeout.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Folders in the system temp folder for what a test starts (a database, a broker, a Redis), deleted by whoever
 * stops it, once it is stopped: a test run leaves nothing behind in the temp folder.
 */
public final class TempFolders {
  private TempFolders() {}

  public static Path create(String prefix) {
    try {
      return Files.createTempDirectory(prefix);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Deletes {@code folder} and everything in it, as far as it can: a file that cannot be deleted stays. */
  public static void delete(Path folder) {
    if (folder == null || !Files.exists(folder)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(folder)) {
      paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      // a file vanished while walking (a stopping server removing its own): what is left stays
    }
  }
}
