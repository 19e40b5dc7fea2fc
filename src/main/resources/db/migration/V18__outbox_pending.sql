-- The events the dispatcher has not given a feed position yet, in a table of their own
-- (docs/decisions/0031-dispatch-queue.md). They were found by outbox_unpositioned, a partial index of outbox: giving
-- an event its position left the entry behind until a vacuum of the whole outbox, which autovacuum runs once a fifth
-- of the table has changed, so the dispatcher's read, ten times a second, walked every event positioned since (19-38
-- ms a read behind 2,000,000 of them). This table holds only the waiting ones; the dispatcher vacuums it after every
-- 10,000 it took, and autovacuum whenever 1,000 rows went.
CREATE TABLE outbox_pending (event_id bigint PRIMARY KEY)
  WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000);

-- Every statement that writes events queues them, whichever node version runs it.
CREATE FUNCTION outbox_pending_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO outbox_pending (event_id) SELECT event_id FROM added WHERE position IS NULL;
  RETURN NULL;
END $$;
-- First the trigger (its lock waits for the transactions writing events now and holds off new ones until this
-- migration commits), then the events already waiting: none is missed.
CREATE TRIGGER outbox_pending_added AFTER INSERT ON outbox REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_pending_added();
INSERT INTO outbox_pending (event_id) SELECT event_id FROM outbox WHERE position IS NULL;

DROP INDEX outbox_unpositioned;
