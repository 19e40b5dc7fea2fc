package ordertimeout.sweep;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A shard counts as unclaimed only once every look has found it so for the lasting time (decision 0050). */
class UnclaimedStreaksTest {
  private static final long LASTING = 30;

  @Test
  void aShardFoundUnclaimedByEveryLookCountsOnceTheLastingTimeHasPassed() {
    UnclaimedStreaks streaks = new UnclaimedStreaks(8, LASTING);
    assertThat(streaks.lookedAndFound(new int[] {5, 2}, 100, 100)).as("the first look, as at a node's start").isEmpty();
    assertThat(streaks.lookedAndFound(new int[] {2, 5}, 129, 129)).isEmpty();
    assertThat(streaks.lookedAndFound(new int[] {5, 2}, 130, 130)).as("in shard order").containsExactly(2, 5);
    assertThat(streaks.lookedAndFound(new int[] {5, 2}, 500, 500)).containsExactly(2, 5);
  }

  @Test
  void aLookThatFindsAShardClaimedStartsItsStreakAgain() {
    UnclaimedStreaks streaks = new UnclaimedStreaks(8, LASTING);
    streaks.lookedAndFound(new int[] {2, 5}, 100, 100);
    streaks.lookedAndFound(new int[] {5}, 110, 110); // shard 2 claimed again: the group settled
    streaks.lookedAndFound(new int[] {2, 5}, 120, 120); // and unclaimed in a rebalance
    assertThat(streaks.lookedAndFound(new int[] {2, 5}, 130, 130)).containsExactly(5);
    assertThat(streaks.lookedAndFound(new int[] {2, 5}, 150, 150)).containsExactly(2, 5);
  }

  @Test
  void aStreakBeginsWhenItsFirstLookIsAnsweredAndLastsUntilTheLatestLookIsSent() {
    UnclaimedStreaks streaks = new UnclaimedStreaks(8, LASTING);
    // sent at 100, answered at 125 after waiting for a connection: the shard may have been claimed until 125
    assertThat(streaks.lookedAndFound(new int[] {5}, 100, 125)).isEmpty();
    assertThat(streaks.lookedAndFound(new int[] {5}, 150, 150)).as("unclaimed for 25 only").isEmpty();
    assertThat(streaks.lookedAndFound(new int[] {5}, 154, 180)).as("known unclaimed until 154 only").isEmpty();
    assertThat(streaks.lookedAndFound(new int[] {5}, 155, 155)).containsExactly(5);
  }
}
