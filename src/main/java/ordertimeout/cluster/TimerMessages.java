package ordertimeout.cluster;

import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.Deadlines;

import java.util.ArrayList;
import java.util.List;

/**
 * The text of a record on the timer topic: one line per order, "schedule id closeAtMillis remindAtMillis"
 * (-1 where a timer is not wanted) or "cancel id". Text so that an operator can read the topic with
 * the console consumer.
 */
public final class TimerMessages {
  /**
   * The most lines a node puts in one record when it sends many at once (a hand-over): a line is at most 69 bytes
   * ("schedule", an id and two times of up to 19 digits each), so a record stays under 280 KB, well within the
   * producer's {@code max.request.size} and the broker's {@code message.max.bytes} (1 MB by default).
   */
  public static final int MAX_LINES_PER_RECORD = 4_000;
  private static final String SCHEDULE = "schedule";
  private static final String CANCEL = "cancel";

  private TimerMessages() {}

  public static void appendSchedule(StringBuilder text, long orderId, long closeAtMillis, long remindAtMillis) {
    text.append(SCHEDULE).append(' ').append(orderId).append(' ').append(closeAtMillis).append(' ').append(remindAtMillis).append('\n');
  }

  public static void appendCancel(StringBuilder text, long orderId) {
    text.append(CANCEL).append(' ').append(orderId).append('\n');
  }

  /** Whether the last line of {@code text} is a cancel: a schedule after it needs a record of its own (see {@link #decode}). */
  public static boolean endsWithCancel(StringBuilder text) {
    int lastLine = text.lastIndexOf("\n", text.length() - 2) + 1;
    return text.length() > 0 && text.indexOf(CANCEL, lastLine) == lastLine;
  }

  /** What one record asks for; a line that cannot be read is skipped and counted. */
  public record Decoded(Deadlines schedule, CancelTimers cancel, int unreadable) {}

  /** {@code text} null (a record without a value, which no node writes) counts as one unreadable line. */
  public static Decoded decode(String text) {
    if (text == null) {
      return new Decoded(Deadlines.EMPTY, new CancelTimers(new long[0]), 1);
    }
    List<long[]> schedules = new ArrayList<>();
    List<Long> cancels = new ArrayList<>();
    int unreadable = 0;
    for (String line : text.split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      String[] fields = line.trim().split(" ");
      try {
        if (fields[0].equals(SCHEDULE) && fields.length == 4) {
          schedules.add(new long[] {Long.parseLong(fields[1]), Long.parseLong(fields[2]), Long.parseLong(fields[3])});
        } else if (fields[0].equals(CANCEL) && fields.length == 2) {
          cancels.add(Long.parseLong(fields[1]));
        } else {
          unreadable++;
        }
      } catch (NumberFormatException e) {
        unreadable++;
      }
    }
    long[] ids = new long[schedules.size()];
    long[] closeAt = new long[schedules.size()];
    long[] remindAt = new long[schedules.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = schedules.get(i)[0];
      closeAt[i] = schedules.get(i)[1];
      remindAt[i] = schedules.get(i)[2];
    }
    return new Decoded(new Deadlines(ids, closeAt, remindAt),
        new CancelTimers(cancels.stream().mapToLong(Long::longValue).toArray()), unreadable);
  }
}
