package ordertimeout.order;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class OrderRejectedTest {

  @Test
  void carriesItsReasonAndDetailAndNoStackTrace() {
    OrderRejected rejected = new OrderRejected(OrderRejected.Reason.INSUFFICIENT_STOCK, "SKU-1 has 0 available");
    assertThat(rejected.reason()).isEqualTo(OrderRejected.Reason.INSUFFICIENT_STOCK);
    assertThat(rejected.getMessage()).isEqualTo("SKU-1 has 0 available");
    assertThat(rejected.getStackTrace()).as("an answer, not a fault: filling in a stack trace would cost each refusal").isEmpty();
  }
}
