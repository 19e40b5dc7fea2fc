package ordertimeout.timer;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import ordertimeout.metrics.Meters;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** What readiness reads: a node is loaded only once it has been given its shards and has loaded every one. */
class OwnedShardsTest {

  @Test
  void aClusterNodeIsNotLoadedBeforeTheGroupGaveItItsShards() {
    OwnedShards owned = OwnedShards.none(8);
    assertThat(owned.allLoaded()).as("not assigned yet (group not joined, wrong settings, no broker)").isFalse();

    owned.add(new int[0]);
    assertThat(owned.allLoaded()).as("assigned nothing: nothing to load").isTrue();

    long gain = owned.add(new int[] {1, 5});
    assertThat(owned.allLoaded()).isFalse();
    owned.markLoaded(new int[] {1}, gain);
    assertThat(owned.allLoaded()).isFalse();
    owned.markLoaded(new int[] {5}, gain);
    assertThat(owned.allLoaded()).isTrue();
    assertThat(owned.list()).containsExactly(1, 5);
  }

  @Test
  void aShardLostAndGivenBackMustBeLoadedAgain() {
    OwnedShards owned = OwnedShards.none(8);
    long gain = owned.add(new int[] {2});
    owned.markLoaded(new int[] {2}, gain);
    assertThat(owned.isLoaded(2)).isTrue();
    owned.remove(new int[] {2});
    owned.markLoaded(new int[] {2}, gain); // a late load of a shard no longer owned does not count
    assertThat(owned.isLoaded(2)).isFalse();
    owned.add(new int[] {2});
    assertThat(owned.allLoaded()).isFalse();
  }

  /**
   * A load of shards 3 and 4 runs; 3 is lost and gained again, and a second load of it starts; the first ends before
   * the second. It read the database before the orders another node took on shard 3 while it owned it: only the
   * second load can count for 3, and if that one fails, its retry must still read 3.
   */
  @Test
  void aShardLostAndGivenBackIsLoadedOnlyByTheLoadOfItsLastGain() {
    OwnedShards owned = OwnedShards.none(8);
    long first = owned.add(new int[] {3, 4});
    owned.remove(new int[] {3});
    long second = owned.add(new int[] {3});
    owned.markLoaded(new int[] {3, 4}, first);
    assertThat(owned.isLoaded(4)).as("owned since the first gain: its load counts").isTrue();
    assertThat(owned.isLoaded(3)).as("lost and gained again while the first load read the database").isFalse();
    assertThat(owned.allLoaded()).as("not ready while the load of the last gain runs").isFalse();
    assertThat(owned.ownsSince(3, second)).as("a failed load of the last gain tries it again").isTrue();
    assertThat(owned.ownsSince(3, first)).as("a failed load of the first gain leaves it to the last's").isFalse();
    owned.markLoaded(new int[] {3}, second);
    assertThat(owned.allLoaded()).isTrue();
  }

  @Test
  void aNodeAloneOwnsEveryShardAndIsLoadedOnceItsWheelIs() {
    OwnedShards owned = OwnedShards.all(4);
    assertThat(owned.list()).containsExactly(0, 1, 2, 3);
    assertThat(owned.allLoaded()).isFalse();
    owned.markLoaded(new int[] {0, 1, 2, 3}, OwnedShards.FROM_THE_START);
    assertThat(owned.allLoaded()).isTrue();
    owned.forgetLoaded();
    assertThat(owned.allLoaded()).isFalse();
  }

  @Test
  void ownsWhatItWasGivenAndItsGaugesSaySo() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    OwnedShards owned = OwnedShards.none(8).bindTo(registry);
    long gain = owned.add(new int[] {1, 5});
    assertThat(owned.owns(1)).isTrue();
    assertThat(owned.owns(2)).isFalse();
    assertThat(registry.get(Meters.SHARDS_OWNED).gauge().value()).isEqualTo(2);
    assertThat(registry.get(Meters.WHEEL_LOADED).gauge().value()).isZero();
    owned.markLoaded(new int[] {1, 5}, gain);
    assertThat(registry.get(Meters.WHEEL_LOADED).gauge().value()).isEqualTo(1);
  }
}
