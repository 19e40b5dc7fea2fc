package ordertimeout.limit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The local token bucket on a clock the test moves by hand: no test depends on how fast it runs. */
class TokenBucketTest {
  private static final long T0 = 1_000_000_000_000L;
  private static final long MILLI = 1_000_000L;
  private static final long SECOND = 1_000 * MILLI;

  @Test
  void startsFullAndGrantsAtMostWhatItHolds() {
    TokenBucket bucket = new TokenBucket(10, 5, T0);
    assertThat(bucket.take(3, T0)).isEqualTo(3);
    assertThat(bucket.take(3, T0)).as("two left").isEqualTo(2);
    assertThat(bucket.take(1, T0)).isZero();
    assertThat(bucket.take(0, T0)).isZero();
  }

  @Test
  void refillsAtItsRateKeepingFractionsOfATokenForLater() {
    TokenBucket bucket = new TokenBucket(10, 5, T0);
    bucket.take(5, T0);
    assertThat(bucket.take(5, T0 + 100 * MILLI)).as("one token per 100 ms").isEqualTo(1);
    assertThat(bucket.take(5, T0 + 350 * MILLI)).as("2.5 tokens: two whole ones").isEqualTo(2);
    assertThat(bucket.take(5, T0 + 400 * MILLI)).as("the half token left plus 0.5").isEqualTo(1);
    assertThat(bucket.take(5, T0 + 500 * MILLI)).as("only what refilled since the last take").isEqualTo(1);
  }

  @Test
  void neverHoldsMoreThanItsBurst() {
    TokenBucket bucket = new TokenBucket(10, 5, T0);
    bucket.take(5, T0);
    assertThat(bucket.take(100, T0 + 60 * SECOND)).isEqualTo(5);
    assertThat(bucket.take(1, T0 + 60 * SECOND)).isZero();
  }

  @Test
  void aClockThatStepsBackNeitherTakesTokensAwayNorRefillsTwice() {
    TokenBucket bucket = new TokenBucket(10, 5, T0);
    bucket.take(3, T0);
    assertThat(bucket.take(1, T0 - SECOND)).as("the two tokens left are still there").isEqualTo(1);
    assertThat(bucket.take(5, T0 + 100 * MILLI)).as("one left plus one refilled since T0, not since T0 - 1 s").isEqualTo(2);
  }

  @Test
  void saysHowLongUntilTheWantedTokensAreThereCappedAtTheBurst() {
    TokenBucket bucket = new TokenBucket(10, 5, T0);
    assertThat(bucket.nanosUntil(5, T0)).as("full now").isZero();
    bucket.take(5, T0);
    assertThat(bucket.nanosUntil(3, T0)).as("3 tokens at 10 per second").isBetween(300 * MILLI, 300 * MILLI + 1);
    assertThat(bucket.nanosUntil(100, T0)).as("never more than a full bucket").isBetween(500 * MILLI, 500 * MILLI + 1);
    assertThat(bucket.nanosUntil(3, T0 + 100 * MILLI)).as("one refilled meanwhile").isBetween(200 * MILLI, 200 * MILLI + 1);
    assertThat(bucket.nanosUntil(1, T0 + 100 * MILLI)).isZero();
    assertThat(bucket.take(1, T0 + 100 * MILLI)).as("asking does not take").isEqualTo(1);
  }

  @Test
  void refusesARateOrBurstThatCouldNeverGrant() {
    assertThatThrownBy(() -> new TokenBucket(0, 5, T0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new TokenBucket(-1, 5, T0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new TokenBucket(10, 0.5, T0)).isInstanceOf(IllegalArgumentException.class);
    assertThat(new TokenBucket(0.5, 1, T0).take(2, T0)).as("the smallest bucket allowed").isEqualTo(1);
  }
}
