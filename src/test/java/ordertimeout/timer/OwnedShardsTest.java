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

    owned.add(new int[] {1, 5});
    assertThat(owned.allLoaded()).isFalse();
    owned.markLoaded(new int[] {1});
    assertThat(owned.allLoaded()).isFalse();
    owned.markLoaded(new int[] {5});
    assertThat(owned.allLoaded()).isTrue();
    assertThat(owned.list()).containsExactly(1, 5);
  }

  @Test
  void aShardLostAndGivenBackMustBeLoadedAgain() {
    OwnedShards owned = OwnedShards.none(8);
    owned.add(new int[] {2});
    owned.markLoaded(new int[] {2});
    assertThat(owned.isLoaded(2)).isTrue();
    owned.remove(new int[] {2});
    owned.markLoaded(new int[] {2}); // a late load of a shard no longer owned does not count
    assertThat(owned.isLoaded(2)).isFalse();
    owned.add(new int[] {2});
    assertThat(owned.allLoaded()).isFalse();
  }

  @Test
  void aNodeAloneOwnsEveryShardAndIsLoadedOnceItsWheelIs() {
    OwnedShards owned = OwnedShards.all(4);
    assertThat(owned.list()).containsExactly(0, 1, 2, 3);
    assertThat(owned.allLoaded()).isFalse();
    owned.markLoaded(new int[] {0, 1, 2, 3});
    assertThat(owned.allLoaded()).isTrue();
    owned.forgetLoaded();
    assertThat(owned.allLoaded()).isFalse();
  }

  @Test
  void ownsWhatItWasGivenAndItsGaugesSaySo() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    OwnedShards owned = OwnedShards.none(8).bindTo(registry);
    owned.add(new int[] {1, 5});
    assertThat(owned.owns(1)).isTrue();
    assertThat(owned.owns(2)).isFalse();
    assertThat(registry.get(Meters.SHARDS_OWNED).gauge().value()).isEqualTo(2);
    assertThat(registry.get(Meters.WHEEL_LOADED).gauge().value()).isZero();
    owned.markLoaded(new int[] {1, 5});
    assertThat(registry.get(Meters.WHEEL_LOADED).gauge().value()).isEqualTo(1);
  }
}
