package ordertimeout.bus;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageCodec;

import java.util.List;

/**
 * Passes immutable message records by reference within one node. Nodes never talk over the event
 * bus (Kafka carries timers between them), so there is no wire format.
 */
public final class LocalCodec<T> implements MessageCodec<T, T> {
  private static final List<Class<?>> MESSAGE_TYPES = List.of(
      Deadlines.class,
      CancelTimers.class, ShardChange.class, Revocation.class, DueOrders.class, PermitRequest.class, PermitGrant.class);

  private final Class<T> type;

  private LocalCodec(Class<T> type) {
    this.type = type;
  }

  /** Registers every message type once per Vert.x instance. */
  public static void registerAll(Vertx vertx) {
    for (Class<?> type : MESSAGE_TYPES) {
      register(vertx, type);
    }
  }

  private static <T> void register(Vertx vertx, Class<T> type) {
    vertx.eventBus().registerDefaultCodec(type, new LocalCodec<>(type));
  }

  @Override
  public void encodeToWire(Buffer buffer, T message) {
    throw new UnsupportedOperationException(type.getSimpleName() + " is a local-only message");
  }

  @Override
  public T decodeFromWire(int pos, Buffer buffer) {
    throw new UnsupportedOperationException(type.getSimpleName() + " is a local-only message");
  }

  @Override
  public T transform(T message) {
    return message;
  }

  @Override
  public String name() {
    return "local-" + type.getName();
  }

  @Override
  public byte systemCodecID() {
    return -1;
  }
}
