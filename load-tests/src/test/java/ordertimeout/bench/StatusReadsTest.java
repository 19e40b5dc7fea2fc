package ordertimeout.bench;

import io.vertx.core.Vertx;
import io.vertx.core.net.NetServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The generator's status reads against a server that writes each answer in three pieces (the head's end and the body
 * split), on one connection: every read waits its turn, gets its status and whether its body says PAID, and a read
 * whose connection the server closes, or whose answer cannot be parsed, gets status 0 while the next goes out on a
 * connection opened again. Runs with the
 * bench profile only: {@code mvn -B -Pbench test -Dtest=StatusReadsTest -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class StatusReadsTest {
  private final Vertx vertx = Vertx.vertx();

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  @Test
  void answersInPiecesAreReadWholeInTurnAndAClosedConnectionIsOpenedAgain() throws Exception {
    List<String> requests = new CopyOnWriteArrayList<>();
    AtomicInteger accepted = new AtomicInteger();
    NetServer server = vertx.createNetServer().connectHandler(socket -> {
      accepted.incrementAndGet();
      StringBuilder arriving = new StringBuilder();
      socket.handler(chunk -> {
        arriving.append(chunk.toString("ISO-8859-1"));
        int end = arriving.indexOf("\r\n\r\n");
        if (end < 0) {
          return;
        }
        String request = arriving.substring(0, end + 4);
        arriving.delete(0, end + 4);
        requests.add(request);
        String id = request.substring("GET /v1/orders/".length(), request.indexOf(' ', "GET /v1/orders/".length()));
        if (id.equals("drop")) {
          socket.close();
          return;
        }
        if (id.equals("garbled")) {
          socket.write("HTTP/1.1 200 OK\r\ncontent-length: many\r\n\r\n");
          return;
        }
        String body = "{\"id\":\"" + id + "\",\"status\":\"" + (id.equals("paid") ? "PAID" : "UNPAID") + "\"}";
        String answer = "HTTP/1.1 " + (id.equals("missing") ? "404 Not Found" : "200 OK")
            + "\r\ncontent-type: application/json\r\ncontent-length: " + body.length() + "\r\n\r\n" + body;
        int headSplit = answer.indexOf("\r\n\r\n") + 2;
        socket.write(answer.substring(0, headSplit));
        vertx.setTimer(5, later -> socket.write(answer.substring(headSplit, headSplit + 10)));
        vertx.setTimer(10, later -> socket.write(answer.substring(headSplit + 10)));
      });
    }).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);

    List<String> ids = List.of("a", "paid", "missing", "drop", "garbled", "b");
    CompletableFuture<List<String>> answers = new CompletableFuture<>();
    vertx.runOnContext(go -> {
      StatusReads reads = new StatusReads(vertx, "127.0.0.1", List.of(server.actualPort()), "key-1");
      reads.connect(1).onFailure(answers::completeExceptionally).onSuccess(open -> {
        List<String> got = new ArrayList<>();
        for (String id : ids) {
          reads.read(0, id, (writtenAt, status, saysPaid) -> {
            got.add(id + " " + status + (saysPaid ? " PAID" : ""));
            if (got.size() == ids.size()) {
              reads.close();
              answers.complete(got);
            }
          });
        }
      });
    });

    assertThat(answers.get(10, TimeUnit.SECONDS))
        .containsExactly("a 200", "paid 200 PAID", "missing 404", "drop 0", "garbled 0", "b 200");
    assertThat(accepted.get()).as("connections: the first, one after the server closed it, one after the garbled answer")
        .isEqualTo(3);
    assertThat(requests).hasSize(6).allSatisfy(request -> assertThat(request)
        .matches("GET /v1/orders/\\w+ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer key-1\r\n\r\n"));
  }
}
