package ordertimeout.kafka;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OpenClientsTest {
  /** Stands for a Kafka client: counts its closes. */
  private static final class Client {
    final AtomicInteger closes = new AtomicInteger();
  }

  @Test
  void closeAllClosesTheOpenClientsOnceAndNotThoseClosedOrForgotten() throws Exception {
    OpenClients clients = new OpenClients();
    Client open = clients.make(Client::new, client -> client.closes.incrementAndGet());
    Client closedEarlier = clients.make(Client::new, client -> client.closes.incrementAndGet());
    Client closedByItsOwner = clients.make(Client::new, client -> client.closes.incrementAndGet());
    clients.closeNow(closedEarlier);
    clients.forget(closedByItsOwner);

    clients.closeAll();
    clients.closeAll();
    clients.closeNow(open);

    assertThat(open.closes).hasValue(1);
    assertThat(closedEarlier.closes).hasValue(1);
    assertThat(closedByItsOwner.closes).hasValue(0);
  }

  @Test
  void noClientIsMadeAfterCloseAll() {
    OpenClients clients = new OpenClients();
    clients.closeAll();
    AtomicInteger made = new AtomicInteger();
    assertThatThrownBy(() -> clients.make(() -> {
      made.incrementAndGet();
      return new Client();
    }, client -> client.closes.incrementAndGet())).isInstanceOf(OpenClients.Closed.class);
    assertThat(made).as("clients made").hasValue(0);
  }

  /** A client still being made when the verticle stops (its maker blocks on a lookup) is closed once made. */
  @Test
  void aClientBeingMadeWhileCloseAllRunsIsClosedOnceMade() throws Exception {
    OpenClients clients = new OpenClients();
    CountDownLatch making = new CountDownLatch(1);
    CountDownLatch closedAll = new CountDownLatch(1);
    Client client = new Client();
    CompletableFuture<Client> made = CompletableFuture.supplyAsync(() -> {
      try {
        return clients.make(() -> {
          making.countDown();
          assertThat(closedAll.await(30, TimeUnit.SECONDS)).isTrue();
          return client;
        }, it -> it.closes.incrementAndGet());
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(making.await(30, TimeUnit.SECONDS)).isTrue();
    clients.closeAll();
    closedAll.countDown();

    assertThatThrownBy(() -> made.get(30, TimeUnit.SECONDS)).hasRootCauseInstanceOf(OpenClients.Closed.class);
    assertThat(client.closes).as("closes of the client made while closeAll ran").hasValue(1);
  }
}
