package ordertimeout.faults;

import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/** Every operation of a scenario as the client saw it. */
final class Recording {
  enum Kind { CREATE, PAY, READ }

  /**
   * OK: a success answer. FAILED: a definite refusal (4xx, 503), which must have changed nothing. UNKNOWN: no answer
   * the client could trust (timeout, connection lost, another 5xx) after its last attempt: it may or may not have happened.
   */
  enum Outcome { OK, FAILED, UNKNOWN }

  /**
   * One operation: {@code waitMillis} from the time it was due (not sent: an open model) to its last answer,
   * {@code longestRequestMillis} the longest of its requests (the first counted from the due time, a retry from its sending);
   * {@code status} the last HTTP status (0: none), {@code code} the problem code, {@code userId} and {@code orderId}
   * which order it was about, {@code attempts} how many requests it took.
   */
  record Operation(Kind kind, Outcome outcome, int status, String code, String userId, String orderId, long waitMillis,
                   long longestRequestMillis, int attempts) {}

  private final Queue<Operation> operations = new ConcurrentLinkedQueue<>();
  private final AtomicLong longestSendLagNanos = new AtomicLong();
  private final AtomicLong longestFromSendNanos = new AtomicLong();

  /**
   * One request: how long after its start (due time, or retry) the generator sent it, and how long its answer took from
   * then. They tell the generator's own lag apart from the time the request spent in the network and the service.
   */
  void sent(long lagNanos, long fromSendNanos) {
    longestSendLagNanos.accumulateAndGet(lagNanos, Math::max);
    longestFromSendNanos.accumulateAndGet(fromSendNanos, Math::max);
  }

  long longestSendLagMillis() {
    return TimeUnit.NANOSECONDS.toMillis(longestSendLagNanos.get());
  }

  /** The longest lag of the generator in sending a request, and the longest answer counted from the sending, in ms. */
  String sendingFigures() {
    return "generator lag max " + TimeUnit.NANOSECONDS.toMillis(longestSendLagNanos.get())
        + " ms, longest from sending " + TimeUnit.NANOSECONDS.toMillis(longestFromSendNanos.get()) + " ms";
  }

  void add(Operation operation) {
    operations.add(operation);
  }

  List<Operation> operations() {
    return List.copyOf(operations);
  }

  long count(Outcome outcome) {
    return operations.stream().filter(operation -> operation.outcome() == outcome).count();
  }

  /** The longest any one request waited for its answer. */
  long longestWaitMillis() {
    return operations.stream().mapToLong(Operation::longestRequestMillis).max().orElse(0);
  }

  /** The operation with the request that waited longest, for the summary (what it was, how many requests, its last answer). */
  Optional<Operation> slowest() {
    return operations.stream().max(Comparator.comparingLong(Operation::longestRequestMillis));
  }

  /** Last answers by operation, HTTP status (0: none) and problem code (or the client's exception), for the summary. */
  Map<String, Long> byAnswer() {
    Map<String, Long> counts = new TreeMap<>();
    operations.forEach(operation -> counts.merge(operation.kind() + " " + operation.status()
        + (operation.code() == null ? "" : " " + operation.code()), 1L, Long::sum));
    return counts;
  }

  /** Operations that took more than one request. */
  long retried() {
    return operations.stream().filter(operation -> operation.attempts() > 1).count();
  }
}
