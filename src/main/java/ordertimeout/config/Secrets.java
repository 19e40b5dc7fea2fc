package ordertimeout.config;

import java.util.regex.Pattern;

/** Keeps passwords out of what is logged or put in an exception message. */
public final class Secrets {
  /** The password of a URL's user info: scheme://user:password@host. */
  private static final Pattern URL_PASSWORD = Pattern.compile("(://[^:/?#@\\s]*:)[^@\\s]*@");

  private Secrets() {}

  /** {@code text} with the password of every URL in it replaced by ***: postgresql://app:***@db:5432/orders. */
  public static String withoutPasswords(String text) {
    return text == null ? null : URL_PASSWORD.matcher(text).replaceAll("$1***@");
  }
}
