package ordertimeout.support;

import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;

/** The plans of what a session runs, statements inside functions and triggers included, from auto_explain. */
public final class AutoExplain {
  private AutoExplain() {}

  /** From now on, the session's plans come back to it as notices (JDBC warnings); the warnings so far are cleared. */
  public static void sendPlansAsNotices(Statement session) throws SQLException {
    session.execute("LOAD 'auto_explain'");
    session.execute("SET auto_explain.log_min_duration = 0");
    session.execute("SET auto_explain.log_nested_statements = on");
    session.execute("SET auto_explain.log_level = notice");
    session.execute("SET client_min_messages = notice");
    session.clearWarnings();
  }

  /** The plans among {@code warnings} whose text contains {@code text}, one after another. */
  public static String plansMentioning(SQLWarning warnings, String text) {
    StringBuilder plans = new StringBuilder();
    for (SQLWarning warning = warnings; warning != null; warning = warning.getNextWarning()) {
      if (warning.getMessage().contains(text)) {
        plans.append(warning.getMessage()).append('\n');
      }
    }
    return plans.toString();
  }
}
