package ordertimeout.close;

import ordertimeout.metrics.NodeStats;
import ordertimeout.support.Api;
import ordertimeout.support.Prometheus;
import ordertimeout.support.Sql;

import java.time.Duration;

/**
 * What the tests of the closes' concurrency share: with stock rows held by an open transaction
 * ({@link Sql#connectionHoldingStock}), the closes running at once counted as the database's lock waiters; and creates
 * reported to the node's stats as intake would.
 */
final class HeldCloses {
  private HeldCloses() {}

  /** Sessions waiting on a lock: here, only the closes held by the locked stock rows. */
  static long closesWaitingForStock() {
    return Sql.count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()");
  }

  static double allowedCloses(Api api) {
    return new Prometheus(api.get("/metrics", null).body()).sum("ordertimeout_close_concurrency");
  }

  /** Creates answered in {@code latency}, one every 20 ms, reported to the node's stats as the intake would. */
  static final class ReportedCreates extends Thread {
    private final NodeStats stats;
    private final long latencyNanos;

    ReportedCreates(NodeStats stats, Duration latency) {
      super("reported-creates");
      this.stats = stats;
      this.latencyNanos = latency.toNanos();
      setDaemon(true);
    }

    @Override
    public void run() {
      while (!isInterrupted()) {
        stats.createAnswered(201, latencyNanos);
        try {
          Thread.sleep(20);
        } catch (InterruptedException stop) {
          return;
        }
      }
    }

    void stopReporting() throws InterruptedException {
      interrupt();
      join();
    }
  }
}
