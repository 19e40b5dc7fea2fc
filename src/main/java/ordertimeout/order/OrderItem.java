package ordertimeout.order;

public record OrderItem(String sku, int qty) {}
