package ordertimeout.bench;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What the foreign key from order_items to orders cost, the reason for migration V2: the service's group-commit
 * create transaction driven without HTTP (as {@link IntakeBenchmark}'s "group commit without HTTP": 4 connections,
 * groups of 64, realistic SKU spread), with the constraint added back and dropped again in turns, in one database,
 * after a warm-up and ANALYZE. Order of the runs: with, without, without, with, with, without... so that neither
 * side always runs on the smaller tables. Not part of run-all.sh (about 1.5 minutes).
 *
 * <p>Arguments: seconds per run (8), runs per side (3).
 */
public final class ItemsForeignKeyBenchmark {
  private static final String ADD_FOREIGN_KEY = "ALTER TABLE order_items ADD CONSTRAINT order_items_order_id_fkey "
      + "FOREIGN KEY (order_id) REFERENCES orders (id)";
  private static final String DROP_FOREIGN_KEY = "ALTER TABLE order_items DROP CONSTRAINT IF EXISTS order_items_order_id_fkey";

  public static void main(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 8;
    int runsPerSide = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-items-fk")) {
      db.executeScript("INSERT INTO inventory (sku, available) SELECT 'SKU-' || s, 1000000000 FROM generate_series(0, 999) s");
      Vertx vertx = Vertx.vertx();
      IntakeBenchmark.direct(vertx, db, 1000, 4, 64, 901, 5); // warm-up, not recorded
      db.executeScript("ANALYZE");
      List<Double> with = new ArrayList<>();
      List<Double> without = new ArrayList<>();
      boolean present = false;
      for (int run = 0; run < 2 * runsPerSide; run++) {
        boolean foreignKey = run % 4 == 0 || run % 4 == 3;
        if (foreignKey != present) {
          db.executeScript(foreignKey ? ADD_FOREIGN_KEY : DROP_FOREIGN_KEY);
          present = foreignKey;
        }
        double rate = IntakeBenchmark.direct(vertx, db, 1000, 4, 64, 902, seconds).getDouble("perSecond");
        (foreignKey ? with : without).add(rate);
        System.out.printf("run %d, %s the foreign key: %.0f creates/s%n", run + 1, foreignKey ? "with" : "without", rate);
      }
      db.executeScript(DROP_FOREIGN_KEY);
      double withMedian = median(with);
      double withoutMedian = median(without);
      Results.write("items-foreign-key", Results.header("items-foreign-key")
          .put("secondsPerRun", seconds)
          .put("withForeignKey", new JsonArray(with)).put("withoutForeignKey", new JsonArray(without))
          .put("medianWith", Results.round(withMedian)).put("medianWithout", Results.round(withoutMedian))
          .put("withoutVsWith", Results.round(withoutMedian / withMedian)));
      System.out.printf("items-foreign-key: group-commit creates without HTTP, realistic spread, %d s runs; with the "
          + "foreign key %s/s (median %.0f), without %s/s (median %.0f): %.2fx%n", seconds, rates(with), withMedian,
          rates(without), withoutMedian, withoutMedian / withMedian);
    }
    System.exit(0);
  }

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    return sorted.get(sorted.size() / 2);
  }

  private static String rates(List<Double> values) {
    return String.join(" / ", values.stream().map(value -> String.format("%,.0f", value)).toList());
  }
}
