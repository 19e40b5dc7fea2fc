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
 * reset and its connection attempts fail); {@link #blackhole()} forwards nothing and answers nothing
 * but keeps every connection and accepts new ones (a network that drops packets: the node's reads and
 * connects wait until their own timeouts); {@link #restore()} lets connections through again, what a
 * blackhole held included.
 */
public final class TcpProxy implements AutoCloseable {
  private final String targetHost;
  private final int targetPort;
  private final ServerSocket server;
  private final List<Socket> open = new ArrayList<>();
  private final List<Socket> upstreams = new ArrayList<>();
  private boolean cut;
  private boolean blackholed;
  private int refused;
  private volatile boolean closed;

  private TcpProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 1024, InetAddress.getLoopbackAddress());
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
    upstreams.clear();
    notifyAll();
  }

  /** Forwards nothing either way and holds every connection, old and new, until {@link #restore()} or {@link #cut()}. */
  public synchronized void blackhole() {
    blackholed = true;
  }

  public synchronized void restore() {
    cut = false;
    blackholed = false;
    notifyAll();
  }

  /** The local ports of the proxy's connections to the server: the server sees its clients on these. */
  public synchronized List<Integer> upstreamPorts() {
    return upstreams.stream().map(Socket::getLocalPort).toList();
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
      upstreams.clear();
      notifyAll();
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
      synchronized (this) {
        if (cut) {
          refused++;
          closeQuietly(client);
          continue;
        }
        open.add(client);
      }
      Thread connector = new Thread(() -> connect(client), "tcp-proxy-connect-" + port());
      connector.setDaemon(true);
      connector.start();
    }
  }

  /** Connects an accepted client to the server once no blackhole holds it, and pumps both ways. */
  private void connect(Socket client) {
    if (!awaitPassable(client)) {
      return;
    }
    try {
      Socket upstream = new Socket(targetHost, targetPort);
      client.setTcpNoDelay(true);
      upstream.setTcpNoDelay(true);
      synchronized (this) {
        if (cut || client.isClosed()) {
          closeQuietly(client);
          closeQuietly(upstream);
          return;
        }
        open.add(upstream);
        upstreams.add(upstream);
      }
      pump(client, upstream);
      pump(upstream, client);
    } catch (IOException e) {
      closeQuietly(client);
    }
  }

  /** Waits while the proxy is blackholed; false when the connection was cut or closed meanwhile. */
  private synchronized boolean awaitPassable(Socket socket) {
    while (blackholed && !cut && !closed && !socket.isClosed()) {
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return !cut && !closed && !socket.isClosed();
  }

  /** Copies from one socket to the other until either closes, then closes both. */
  private void pump(Socket from, Socket to) {
    Thread thread = new Thread(() -> {
      byte[] buffer = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int read;
        while ((read = in.read(buffer)) >= 0 && awaitPassable(to)) {
          out.write(buffer, 0, read);
          out.flush();
        }
      } catch (IOException e) {
        // cut, or one side went away
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        synchronized (this) {
          open.remove(from);
          open.remove(to);
          upstreams.remove(from);
          upstreams.remove(to);
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
