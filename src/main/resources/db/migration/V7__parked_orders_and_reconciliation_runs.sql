-- Orders whose timeout close failed: how many times (counted across restarts and nodes), the last error, and, once
-- the count reached close.parkAfterFailures, when the order was parked. A parked order is left alone by the wheel and
-- the sweep (the close statement skips it) until an admin retries it; a close of the order deletes its row.
-- No foreign key to orders, as for order_items (V2): the close path writes neither table's rows twice.
CREATE TABLE close_failures (
  order_id        bigint PRIMARY KEY,
  failures        int NOT NULL CHECK (failures > 0),
  first_failed_at timestamptz NOT NULL,
  last_failed_at  timestamptz NOT NULL,
  last_error      text NOT NULL,
  parked_at       timestamptz           -- null while the order is still retried
);
CREATE INDEX close_failures_parked ON close_failures (parked_at, order_id) WHERE parked_at IS NOT NULL;

-- Every reconciliation run with its report. A scheduled run claims its slot (the wall-clock time it was due,
-- reconciliation.at in reconciliation.zone) before it starts: one run per slot across restarts and nodes, and a node
-- that starts after a slot with no run for it runs it. Runs asked for over the API have no slot.
CREATE TABLE reconciliation_runs (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  slot          timestamptz UNIQUE,     -- null for a run on request
  trigger       text NOT NULL CHECK (trigger IN ('SCHEDULE', 'REQUEST')),
  node_id       int NOT NULL,
  repair        boolean NOT NULL,
  started_at    timestamptz NOT NULL,
  finished_at   timestamptz,            -- null while it runs, or when its node died in the middle
  report        jsonb,                  -- what it checked, found and repaired; null until finished
  error         text                    -- why it failed, when it did
);
CREATE INDEX reconciliation_runs_finished ON reconciliation_runs (finished_at DESC, id DESC) WHERE finished_at IS NOT NULL;
