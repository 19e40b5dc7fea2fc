package ordertimeout.support;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;

/**
 * HTTP/1.1 over a plain socket, for what a well-behaved client cannot send: a path with bad
 * percent-encoding, half a request, a request sent a byte at a time.
 */
public final class RawHttp implements AutoCloseable {
  private final Socket socket;

  private RawHttp(Socket socket) {
    this.socket = socket;
  }

  public static RawHttp connect(int port) {
    try {
      Socket socket = new Socket();
      socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
      return new RawHttp(socket);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A whole request: the request line, the given header lines, no body. */
  public static String request(String method, String target, String... headers) {
    StringBuilder text = new StringBuilder(method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (String header : headers) {
      text.append(header).append("\r\n");
    }
    return text.append("\r\n").toString();
  }

  public RawHttp send(String text) {
    try {
      socket.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
      socket.getOutputStream().flush();
      return this;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Everything the server sends until it closes the connection or {@code millis} pass without a byte;
   * {@link #closedByServer()} tells which.
   */
  public String readUntilClosed(int millis) {
    ByteArrayOutputStream read = new ByteArrayOutputStream();
    try {
      socket.setSoTimeout(millis);
      InputStream in = socket.getInputStream();
      byte[] buffer = new byte[8192];
      for (int n; (n = in.read(buffer)) >= 0; ) {
        read.write(buffer, 0, n);
      }
      closed = true;
    } catch (SocketTimeoutException e) {
      closed = false;
    } catch (SocketException e) {
      closed = true;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return read.toString(StandardCharsets.ISO_8859_1);
  }

  private boolean closed;

  /** Whether the last {@link #readUntilClosed} ended because the server closed (or reset) the connection. */
  public boolean closedByServer() {
    return closed;
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException ignored) {
      // the server may have reset it already
    }
  }
}
