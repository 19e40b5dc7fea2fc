package ordertimeout.cluster;

import ordertimeout.bus.Deadlines;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The text of a timer-topic record: what the fan-out writes, the owner's consumer reads back. */
class TimerMessagesTest {

  @Test
  void schedulesAndCancelsSurviveTheRoundTrip() {
    StringBuilder text = new StringBuilder();
    TimerMessages.appendSchedule(text, 1001, 1_700_000_000_000L, 1_699_999_700_000L);
    TimerMessages.appendCancel(text, 1002);
    TimerMessages.appendSchedule(text, 1003, 1_700_000_001_000L, Deadlines.NONE);
    TimerMessages.appendCancel(text, 1004);
    assertThat(text.toString()).isEqualTo("""
        schedule 1001 1700000000000 1699999700000
        cancel 1002
        schedule 1003 1700000001000 -1
        cancel 1004
        """);

    TimerMessages.Decoded decoded = TimerMessages.decode(text.toString());

    assertThat(decoded.unreadable()).isZero();
    assertThat(decoded.schedule().orderIds()).containsExactly(1001, 1003);
    assertThat(decoded.schedule().closeAtMillis()).containsExactly(1_700_000_000_000L, 1_700_000_001_000L);
    assertThat(decoded.schedule().remindAtMillis()).containsExactly(1_699_999_700_000L, Deadlines.NONE);
    assertThat(decoded.cancel().orderIds()).containsExactly(1002, 1004);
  }

  @Test
  void aRecordOfOneKindOnlyLeavesTheOtherEmpty() {
    StringBuilder cancels = new StringBuilder();
    TimerMessages.appendCancel(cancels, 7);
    TimerMessages.Decoded onlyCancels = TimerMessages.decode(cancels.toString());
    assertThat(onlyCancels.schedule().size()).isZero();
    assertThat(onlyCancels.cancel().orderIds()).containsExactly(7);

    StringBuilder schedules = new StringBuilder();
    TimerMessages.appendSchedule(schedules, 8, 10, Deadlines.NONE);
    TimerMessages.Decoded onlySchedules = TimerMessages.decode(schedules.toString());
    assertThat(onlySchedules.schedule().orderIds()).containsExactly(8);
    assertThat(onlySchedules.cancel().orderIds()).isEmpty();
  }

  @Test
  void unreadableLinesAreSkippedAndCountedAndTheRestIsKept() {
    String text = String.join("\n",
        "schedule 1 100 -1",
        "schedule 2 100",                  // a field missing
        "schedule 3 100 -1 7",             // a field too many
        "schedule x 100 -1",               // not a number
        "schedule 4 99999999999999999999 -1", // beyond a long
        "cancel",                          // no id
        "cancel 5 6",                      // a field too many
        "cancel five",
        "reschedule 6 100 -1",             // an unknown verb
        "SCHEDULE 7 100 -1",               // verbs are lower case
        "schedule  8 100 -1",              // two spaces make an empty field
        "",                                // blank lines are not counted
        "   ",
        "cancel 9",
        "  schedule 10 200 150  \r");      // surrounding white space (and a CRLF's \r) is trimmed

    TimerMessages.Decoded decoded = TimerMessages.decode(text);

    assertThat(decoded.unreadable()).isEqualTo(10);
    assertThat(decoded.schedule().orderIds()).containsExactly(1, 10);
    assertThat(decoded.schedule().closeAtMillis()).containsExactly(100, 200);
    assertThat(decoded.schedule().remindAtMillis()).containsExactly(-1, 150);
    assertThat(decoded.cancel().orderIds()).containsExactly(9);
  }

  @Test
  void anEmptyRecordAsksForNothing() {
    TimerMessages.Decoded empty = TimerMessages.decode("");
    assertThat(empty.unreadable()).isZero();
    assertThat(empty.schedule().size()).isZero();
    assertThat(empty.cancel().orderIds()).isEmpty();
  }

  @Test
  void aRecordWithoutAValueCountsAsOneUnreadableRecordInsteadOfThrowing() {
    TimerMessages.Decoded tombstone = TimerMessages.decode(null);
    assertThat(tombstone.unreadable()).isEqualTo(1);
    assertThat(tombstone.schedule().size()).isZero();
    assertThat(tombstone.cancel().orderIds()).isEmpty();
  }

  @Test
  void aRecordEndsWithACancelOnlyWhenItsLastLineIsOne() {
    StringBuilder text = new StringBuilder();
    assertThat(TimerMessages.endsWithCancel(text)).isFalse();
    TimerMessages.appendCancel(text, 7);
    assertThat(TimerMessages.endsWithCancel(text)).isTrue();
    TimerMessages.appendSchedule(text, 8, 1000, -1);
    assertThat(TimerMessages.endsWithCancel(text)).isFalse();
    TimerMessages.appendCancel(text, 9);
    assertThat(TimerMessages.endsWithCancel(text)).isTrue();
  }
}
