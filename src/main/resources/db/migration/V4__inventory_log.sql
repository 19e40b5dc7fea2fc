-- Every admin change of a SKU's available units (PUT and adjust): who, what, the units before and after.
-- Written in the statement that makes the change. Kept, not expired by retention: admins' changes are few
-- (docs/decisions/0016-stock-changes-without-lost-updates.md).
CREATE TABLE inventory_log (
  id               bigserial PRIMARY KEY,
  sku              text NOT NULL,
  client           text NOT NULL,   -- the API client of the admin key that made the change
  operation        text NOT NULL CHECK (operation IN ('SET', 'ADJUST')),
  available_before bigint,          -- null when the SET created the SKU's row
  available_after  bigint NOT NULL,
  delta            bigint NOT NULL,
  at               timestamptz NOT NULL DEFAULT now()
);
-- A SKU's log, newest first.
CREATE INDEX inventory_log_by_sku ON inventory_log (sku, id);
