package ordertimeout.maintenance;

import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;

import static org.assertj.core.api.Assertions.assertThat;

/** When the daily reconciliation is due, on fixed instants: zones, the DST days, a slot already run, a start after it. */
class DailyScheduleTest {
  private static final DailySchedule UTC_3AM = new DailySchedule(LocalTime.of(3, 0), ZoneId.of("UTC"));

  @Test
  void beforeTheTimeTheLatestSlotIsYesterdays() {
    Instant now = Instant.parse("2026-12-01T02:59:59Z");
    assertThat(UTC_3AM.latestSlot(now)).isEqualTo(Instant.parse("2026-11-30T03:00:00Z"));
    assertThat(UTC_3AM.nextSlot(now)).isEqualTo(Instant.parse("2026-12-01T03:00:00Z"));
  }

  @Test
  void atTheTimeItIsDueAndTheNextSlotIsTomorrow() {
    Instant now = Instant.parse("2026-12-01T03:00:00Z");
    assertThat(UTC_3AM.due(now, Instant.parse("2026-11-30T03:00:00Z"))).contains(now);
    assertThat(UTC_3AM.nextSlot(now)).isEqualTo(Instant.parse("2026-12-02T03:00:00Z"));
  }

  @Test
  void aStartAfterTheTimeWithNoRunRunsItAtOnce() {
    Instant now = Instant.parse("2026-12-01T17:20:00Z");
    assertThat(UTC_3AM.due(now, null)).as("never ran").contains(Instant.parse("2026-12-01T03:00:00Z"));
    assertThat(UTC_3AM.due(now, Instant.parse("2026-11-29T03:00:00Z"))).as("last ran two days ago")
        .contains(Instant.parse("2026-12-01T03:00:00Z"));
  }

  @Test
  void alreadyRanTodayWaitsForTomorrow() {
    Instant now = Instant.parse("2026-12-01T17:20:00Z");
    assertThat(UTC_3AM.due(now, Instant.parse("2026-12-01T03:00:00Z"))).isEmpty();
    assertThat(UTC_3AM.nextSlot(now)).isEqualTo(Instant.parse("2026-12-02T03:00:00Z"));
  }

  @Test
  void theTimeIsInTheConfiguredZone() {
    DailySchedule tokyo = new DailySchedule(LocalTime.of(3, 0), ZoneId.of("Asia/Tokyo"));
    // 03:00 in Tokyo (UTC+9) is 18:00 UTC the day before
    Instant now = Instant.parse("2026-12-01T17:59:00Z");
    assertThat(tokyo.latestSlot(now)).isEqualTo(Instant.parse("2026-11-30T18:00:00Z"));
    assertThat(tokyo.nextSlot(now)).isEqualTo(Instant.parse("2026-12-01T18:00:00Z"));
    assertThat(tokyo.due(Instant.parse("2026-12-01T18:00:00Z"), Instant.parse("2026-11-30T18:00:00Z")))
        .contains(Instant.parse("2026-12-01T18:00:00Z"));
  }

  @Test
  void onTheSpringForwardDayATimeInTheGapRunsThatMuchLater() {
    // Europe/Berlin skips 02:00-03:00 on 2026-03-29: 02:30 does not exist that day, the slot is 03:30 CEST (01:30 UTC)
    DailySchedule berlin = new DailySchedule(LocalTime.of(2, 30), ZoneId.of("Europe/Berlin"));
    assertThat(berlin.slotOf(LocalDate.of(2026, 3, 28))).isEqualTo(Instant.parse("2026-03-28T01:30:00Z"));
    assertThat(berlin.slotOf(LocalDate.of(2026, 3, 29))).isEqualTo(Instant.parse("2026-03-29T01:30:00Z"));
    assertThat(berlin.slotOf(LocalDate.of(2026, 3, 30))).isEqualTo(Instant.parse("2026-03-30T00:30:00Z"));
    Instant afterSaturday = Instant.parse("2026-03-28T02:00:00Z");
    assertThat(berlin.nextSlot(afterSaturday)).isEqualTo(Instant.parse("2026-03-29T01:30:00Z"));
    // a day of 23 hours: the slot after Sunday's is Monday's, one run each day
    assertThat(berlin.nextSlot(Instant.parse("2026-03-29T01:30:00Z"))).isEqualTo(Instant.parse("2026-03-30T00:30:00Z"));
    assertThat(berlin.due(Instant.parse("2026-03-29T01:29:59Z"), Instant.parse("2026-03-28T01:30:00Z"))).isEmpty();
  }

  @Test
  void onTheFallBackDayATimeInTheOverlapRunsOnceAtItsFirstOccurrence() {
    // Europe/Berlin repeats 02:00-03:00 on 2026-10-25: 02:30 happens at 00:30 UTC (CEST) and 01:30 UTC (CET)
    DailySchedule berlin = new DailySchedule(LocalTime.of(2, 30), ZoneId.of("Europe/Berlin"));
    Instant first = Instant.parse("2026-10-25T00:30:00Z");
    assertThat(berlin.slotOf(LocalDate.of(2026, 10, 25))).isEqualTo(first);
    assertThat(berlin.due(Instant.parse("2026-10-25T01:30:00Z"), first)).as("the second 02:30 is not a second slot").isEmpty();
    assertThat(berlin.nextSlot(Instant.parse("2026-10-25T01:30:00Z"))).isEqualTo(Instant.parse("2026-10-26T01:30:00Z"));
  }
}
