package ordertimeout.http;

/** A request the HTTP edge refuses before it reaches the store: a status and a stable machine-readable code. */
public final class ApiException extends RuntimeException {
  private final int status;
  private final String code;

  public ApiException(int status, String code, String detail) {
    super(detail, null, false, false);
    this.status = status;
    this.code = code;
  }

  /** A path's 64-bit id; 400 {@code code} with {@code detail} when it is not one. */
  static long idOf(String text, String code, String detail) {
    try {
      return Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw badRequest(code, detail);
    }
  }

  public static ApiException badRequest(String code, String detail) {
    return new ApiException(400, code, detail);
  }

  public int status() {
    return status;
  }

  public String code() {
    return code;
  }
}
