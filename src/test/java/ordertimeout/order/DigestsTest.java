package ordertimeout.order;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The digest behind stored request hashes (an idempotent replay compares them) and advisory lock keys: its bytes
 * must never change, or a replay after an upgrade would be refused as a reused key.
 */
class DigestsTest {

  private static String hex(String... parts) {
    return HexFormat.of().formatHex(Digests.sha256(parts));
  }

  @Test
  void isSha256OfEachPartInUtf8FollowedByAZeroByte() {
    assertThat(hex("abc")).isEqualTo("dc1114cd074914bd872cc1f9a23ec910ea2203bc79779ab2e17da25782a624fc");
    assertThat(hex("ab", "c")).isEqualTo("629c2f14f654f026086f2aefe1855533d0897f49df86a19073be17b237361b09");
    assertThat(hex("é")).isEqualTo("6133f2d2dc6cad8dbbfc80f0fb587d3e61469954c82d906cce85239e4c6c8bbd");
    assertThat(hex()).as("no parts: the digest of nothing").isEqualTo("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }

  @Test
  void partsSplitDifferentlyDigestDifferently() {
    assertThat(hex("ab", "c")).isNotEqualTo(hex("a", "bc")).isNotEqualTo(hex("abc"));
    assertThat(hex("a", "")).isNotEqualTo(hex("a"));
  }
}
