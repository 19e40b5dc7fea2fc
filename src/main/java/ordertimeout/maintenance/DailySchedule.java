package ordertimeout.maintenance;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.Optional;

/**
 * A job due every day at a wall-clock time in a time zone. Each day's due instant is a slot; a run is recorded with
 * its slot, so a node that starts after a slot with no run for it runs it (a restart does not postpone the job), and
 * one that finds the slot run already waits for the next. On a day whose time falls into a daylight-saving gap the slot
 * is that much later (02:30 on a spring-forward day of a zone skipping 02:00-03:00 is 03:30); in an overlap it is the
 * earlier of the two instants.
 */
public final class DailySchedule {
  private final LocalTime at;
  private final ZoneId zone;

  public DailySchedule(LocalTime at, ZoneId zone) {
    this.at = at;
    this.zone = zone;
  }

  /** The slot of {@code day}. */
  public Instant slotOf(LocalDate day) {
    return ZonedDateTime.of(day, at, zone).toInstant();
  }

  /** The latest slot at or before {@code now}. */
  public Instant latestSlot(Instant now) {
    LocalDate today = now.atZone(zone).toLocalDate();
    Instant slot = slotOf(today);
    return slot.isAfter(now) ? slotOf(today.minusDays(1)) : slot;
  }

  /** The first slot after {@code now}. */
  public Instant nextSlot(Instant now) {
    LocalDate today = now.atZone(zone).toLocalDate();
    Instant slot = slotOf(today);
    return slot.isAfter(now) ? slot : slotOf(today.plusDays(1));
  }

  /**
   * The slot to run now: the latest slot at or before {@code now}, unless {@code lastRunSlot} (the latest slot that
   * has a run that counts, finished or still going, null when none) is that slot or a later one.
   */
  public Optional<Instant> due(Instant now, Instant lastRunSlot) {
    Instant latest = latestSlot(now);
    return lastRunSlot != null && !lastRunSlot.isBefore(latest) ? Optional.empty() : Optional.of(latest);
  }
}
