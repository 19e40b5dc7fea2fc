package ordertimeout.order;

public enum OrderStatus { UNPAID, PAID, CLOSED }
