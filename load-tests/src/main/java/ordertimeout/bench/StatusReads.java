package ordertimeout.bench;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetSocket;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The open-model generator's status reads ({@code GET /v1/orders/{id}}), on keep-alive connections of its own: each
 * request written as bytes, each answer parsed by hand (status line, content-length, whether the body says PAID).
 * Through Vert.x's HTTP client, on the generator's one thread and the creates' 64 connections, 20,000 reads a second
 * beside 100 creates could not be sent: everything queued (reads and creates p50 18-20 s, two runs, 2026-12-05); with
 * these connections the reads' p50 was 1.7-2.2 ms in the runs between them.
 *
 * <p>A read goes to an idle connection of its node, or waits for the first one to be freed: no pipelining (a buyer's
 * browser does not pipeline), and the caller counts the latency from the read's due time, so a wait for a connection
 * counts against the service. A connection the service closes (its idle bound, or an error) is opened again; a read
 * on it when it closed is answered with status 0. Confined to the event loop of the Vert.x given: not thread-safe.
 */
final class StatusReads {
  /** What a read got: when it was written (nanoTime), its status (0: the connection failed), whether it says PAID. */
  interface Answered {
    void answered(long writtenAt, int status, boolean saysPaid);
  }

  private static final String PAID = "\"status\":\"PAID\"";

  private final NetClient client;
  private final String host;
  private final String authorization;
  private final List<Node> nodes = new ArrayList<>();
  private boolean shutDown;

  StatusReads(Vertx vertx, String host, List<Integer> ports, String apiKey) {
    this.client = vertx.createNetClient(new NetClientOptions().setTcpNoDelay(true));
    this.host = host;
    this.authorization = "Authorization: Bearer " + apiKey + "\r\n";
    ports.forEach(port -> nodes.add(new Node(port)));
  }

  /** Opens {@code connectionsPerNode} connections to each node; completes when all are open. */
  Future<Void> connect(int connectionsPerNode) {
    List<Future<Void>> opened = new ArrayList<>();
    for (Node node : nodes) {
      for (int i = 0; i < connectionsPerNode; i++) {
        opened.add(node.open());
      }
    }
    return Future.all(opened).mapEmpty();
  }

  /** Reads order {@code id} on the node at {@code nodeIndex} of the ports given. */
  void read(int nodeIndex, String id, Answered answered) {
    Buffer request = Buffer.buffer(
        "GET /v1/orders/" + id + " HTTP/1.1\r\nHost: " + host + "\r\n" + authorization + "\r\n");
    nodes.get(nodeIndex).send(new Read(request, answered));
  }

  Future<Void> close() {
    shutDown = true;
    return client.close();
  }

  private record Read(Buffer request, Answered answered) {}

  private final class Node {
    private final int port;
    private final ArrayDeque<Connection> idle = new ArrayDeque<>();
    private final ArrayDeque<Read> waiting = new ArrayDeque<>();
    private int connections;

    private Node(int port) {
      this.port = port;
    }

    private Future<Void> open() {
      return client.connect(port, host).map(socket -> {
        Connection connection = new Connection(this, socket);
        connections++;
        socket.handler(connection::received);
        socket.closeHandler(gone -> connection.closed());
        free(connection);
        return null;
      });
    }

    private void send(Read read) {
      Connection connection = idle.poll();
      if (connection == null) {
        waiting.add(read);
      } else {
        connection.write(read);
      }
    }

    private void free(Connection connection) {
      Read next = waiting.poll();
      if (next == null) {
        idle.add(connection);
      } else {
        connection.write(next);
      }
    }
  }

  private final class Connection {
    private final Node node;
    private final NetSocket socket;
    private Buffer received = Buffer.buffer();
    private Read inFlight;
    private long writtenAt;

    private Connection(Node node, NetSocket socket) {
      this.node = node;
      this.socket = socket;
    }

    private void write(Read read) {
      inFlight = read;
      writtenAt = System.nanoTime();
      socket.write(read.request());
    }

    private void received(Buffer chunk) {
      received.appendBuffer(chunk);
      try {
        answerIfWhole();
      } catch (RuntimeException malformed) {
        socket.close(); // its read is answered 0 when it closed
      }
    }

    private void answerIfWhole() {
      int headEnd = indexOfHeadEnd();
      if (headEnd < 0) {
        return;
      }
      String head = received.getString(0, headEnd, StandardCharsets.ISO_8859_1.name()).toLowerCase(Locale.ROOT);
      int lengthAt = head.indexOf("\r\ncontent-length:");
      if (lengthAt < 0 || inFlight == null) {
        socket.close(); // chunked, or an answer nobody asked for: not what the service sends
        return;
      }
      int lineEnd = head.indexOf('\r', lengthAt + 2);
      int length = Integer.parseInt(head.substring(lengthAt + 17, lineEnd < 0 ? head.length() : lineEnd).trim());
      int bodyStart = headEnd + 4;
      if (received.length() < bodyStart + length) {
        return;
      }
      int status = Integer.parseInt(head.substring(9, 12));
      boolean saysPaid = received.getString(bodyStart, bodyStart + length).contains(PAID);
      received = received.getBuffer(bodyStart + length, received.length());
      Read read = inFlight;
      inFlight = null;
      node.free(this);
      read.answered().answered(writtenAt, status, saysPaid);
    }

    /** Where the blank line after the head begins ({@code \r\n\r\n}), or -1. */
    private int indexOfHeadEnd() {
      for (int i = 0; i + 3 < received.length(); i++) {
        if (received.getByte(i) == '\r' && received.getByte(i + 1) == '\n' && received.getByte(i + 2) == '\r'
            && received.getByte(i + 3) == '\n') {
          return i;
        }
      }
      return -1;
    }

    private void closed() {
      node.connections--;
      node.idle.remove(this);
      if (inFlight != null) {
        Read read = inFlight;
        inFlight = null;
        read.answered().answered(writtenAt, 0, false);
      }
      if (!shutDown) {
        node.open().onFailure(failed -> {
          // none left to serve the reads waiting: they fail, as they would for a client
          while (node.connections == 0 && !node.waiting.isEmpty()) {
            node.waiting.poll().answered().answered(System.nanoTime(), 0, false);
          }
        });
      }
    }
  }
}
