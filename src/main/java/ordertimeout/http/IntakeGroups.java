package ordertimeout.http;

import ordertimeout.order.CreateOutcome;
import ordertimeout.order.CreateRequest;
import ordertimeout.order.PayRequest;
import ordertimeout.order.StateChange;

import java.util.function.Supplier;

/**
 * A node's group commits, one for creates and one for pays, shared by all its intake instances: each is made by the
 * first instance that asks for it, on that instance's event loop, and the others hand their requests over to it. So
 * the groups take the requests of the whole node and are as full as its load makes them (decision 0030).
 */
public final class IntakeGroups {
  private GroupCommit<CreateRequest, CreateOutcome> creates;
  private GroupCommit<PayRequest, StateChange> pays;

  synchronized GroupCommit<CreateRequest, CreateOutcome> creates(Supplier<GroupCommit<CreateRequest, CreateOutcome>> firstInstance) {
    if (creates == null) {
      creates = firstInstance.get();
    }
    return creates;
  }

  synchronized GroupCommit<PayRequest, StateChange> pays(Supplier<GroupCommit<PayRequest, StateChange>> firstInstance) {
    if (pays == null) {
      pays = firstInstance.get();
    }
    return pays;
  }
}
