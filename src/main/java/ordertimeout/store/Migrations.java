package ordertimeout.store;

import org.flywaydb.core.api.MigrationVersion;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.FileSystem;
import java.nio.file.FileSystemAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The newest versioned migration this build carries, to compare with what Flyway recorded in the database. */
public final class Migrations {
  public static final String LOCATION = "db/migration";
  private static final Pattern VERSIONED = Pattern.compile("V([0-9][0-9._]*)__.+\\.sql");

  private Migrations() {}

  /** Reads the class path (blocking: call it off the event loop). */
  public static MigrationVersion latestOnClassPath() {
    URL url = Migrations.class.getClassLoader().getResource(LOCATION);
    if (url == null) {
      throw new IllegalStateException("no " + LOCATION + " on the class path");
    }
    try {
      URI uri = url.toURI();
      if (!"jar".equals(uri.getScheme())) {
        return latestIn(Path.of(uri));
      }
      try (FileSystem jar = FileSystems.newFileSystem(uri, Map.of())) {
        return latestIn(jar.getPath(LOCATION));
      } catch (FileSystemAlreadyExistsException open) {
        return latestIn(FileSystems.getFileSystem(uri).getPath(LOCATION));
      }
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static MigrationVersion latestIn(Path folder) throws IOException {
    try (Stream<Path> files = Files.list(folder)) {
      return files
          .map(file -> VERSIONED.matcher(file.getFileName().toString()))
          .filter(Matcher::matches)
          .map(match -> MigrationVersion.fromVersion(match.group(1)))
          .max(MigrationVersion::compareTo)
          .orElseThrow(() -> new IllegalStateException("no versioned migration in " + folder));
    }
  }
}
