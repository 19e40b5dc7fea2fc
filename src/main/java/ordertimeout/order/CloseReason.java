package ordertimeout.order;

public enum CloseReason { TIMEOUT, USER_CANCELLED, ADMIN }
