package ordertimeout.delivery;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Base64;

/**
 * The Standard Webhooks signature: {@code v1,} and the base64 HMAC-SHA256 of {@code id.timestamp.body} keyed with
 * the webhook's secret. A secret written {@code whsec_<base64>} (as Standard Webhooks libraries make them) is keyed
 * with its decoded bytes, any other with its UTF-8 bytes.
 */
public final class WebhookSignature {
  public static final String ID = "webhook-id";
  public static final String TIMESTAMP = "webhook-timestamp";
  public static final String SIGNATURE = "webhook-signature";
  private static final String PREFIX = "whsec_";

  private WebhookSignature() {}

  /** {@code timestamp} in unix seconds. */
  public static String sign(String secret, String id, long timestamp, String body) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key(secret), "HmacSHA256"));
      byte[] digest = mac.doFinal((id + "." + timestamp + "." + body).getBytes(StandardCharsets.UTF_8));
      return "v1," + Base64.getEncoder().encodeToString(digest);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }

  static byte[] key(String secret) {
    if (secret.startsWith(PREFIX)) {
      try {
        return Base64.getDecoder().decode(secret.substring(PREFIX.length()));
      } catch (IllegalArgumentException notBase64) {
        // taken as it is written, below
      }
    }
    return secret.getBytes(StandardCharsets.UTF_8);
  }
}
