package ordertimeout.order;

import java.util.Comparator;

public record OrderItem(String sku, int qty) {
  /**
   * The order an order's items are listed in everywhere: by SKU, Java's String order, which for a SKU (ASCII) is the
   * byte order PostgreSQL lists them in (COLLATE "C", V28) whatever the database's collation.
   */
  public static final Comparator<OrderItem> BY_SKU = Comparator.comparing(OrderItem::sku);
}
