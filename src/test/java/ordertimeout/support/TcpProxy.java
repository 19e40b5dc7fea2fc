package ordertimeout.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * A TCP proxy on a loopback port in front of a real server, for taking that server away from one node
 * without stopping it for the other tests that share it: {@link #cut()} closes every connection
 * through the proxy and closes each new one as soon as it is accepted (the node sees its connections
 * reset and its connection attempts fail); {@link #silence()} holds every byte and every new connection
 * back, as a network that drops packets does (the node's connections stay open and hear nothing; TCP would
 * retransmit, so nothing is lost); {@link #restore()} lets connections and the bytes held through again.
 */
public final class TcpProxy implements AutoCloseable {
  private final String targetHost;
  private final int targetPort;
  private final ServerSocket server;
  private final List<Socket> open = new ArrayList<>();
  private boolean cut;
  private boolean silent;
  private int refused;
  private volatile boolean closed;

  private TcpProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::acceptLoop, "tcp-proxy-" + server.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public static TcpProxy to(String host, int port) {
    try {
      return new TcpProxy(host, port);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public int port() {
    return server.getLocalPort();
  }

  /** Closes every connection through the proxy, and every new one, until {@link #restore()}. */
  public synchronized void cut() {
    cut = true;
    open.forEach(TcpProxy::closeQuietly);
    open.clear();
  }

  /** Holds back every byte through the proxy, and every new connection, until {@link #restore()}. */
  public synchronized void silence() {
    silent = true;
  }

  public synchronized void restore() {
    cut = false;
    silent = false;
    notifyAll();
  }

  private synchronized void awaitSound() throws InterruptedException {
    while (silent && !closed) {
      wait(100);
    }
  }

  /** Connections accepted and closed at once while cut. */
  public synchronized int refused() {
    return refused;
  }

  @Override
  public void close() {
    closed = true;
    closeQuietly(server);
    synchronized (this) {
      open.forEach(TcpProxy::closeQuietly);
      open.clear();
    }
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      try {
        awaitSound();
      } catch (InterruptedException e) {
        closeQuietly(client);
        return;
      }
      synchronized (this) {
        if (cut) {
          refused++;
          closeQuietly(client);
          continue;
        }
      }
      try {
        Socket upstream = new Socket(targetHost, targetPort);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        synchronized (this) {
          if (cut) {
            closeQuietly(client);
            closeQuietly(upstream);
            continue;
          }
          open.add(client);
          open.add(upstream);
        }
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        closeQuietly(client);
      }
    }
  }

  /** Copies from one socket to the other until either closes, then closes both. */
  private void pump(Socket from, Socket to) {
    Thread thread = new Thread(() -> {
      byte[] buffer = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int read;
        while ((read = in.read(buffer)) >= 0) {
          awaitSound();
          out.write(buffer, 0, read);
          out.flush();
        }
      } catch (IOException | InterruptedException e) {
        // cut, or one side went away
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        synchronized (this) {
          open.remove(from);
          open.remove(to);
        }
      }
    }, "tcp-proxy-pump-" + port());
    thread.setDaemon(true);
    thread.start();
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      // already closed
    }
  }
}
