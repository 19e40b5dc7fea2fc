-- Who holds each node id (part of every order id), so that two running nodes never mint with the same one,
-- and how far that id's order ids have gone, so that ids never go back across a restart or a clock stepped back.
CREATE TABLE node_leases (
  node_id              smallint PRIMARY KEY CHECK (node_id BETWEEN 0 AND 1023),
  holder               text NOT NULL,         -- a random id of the running instance; '' while nobody ever held it
  expires_at           timestamptz NOT NULL,  -- by the database clock; free for another holder after this
  id_high_water_millis bigint NOT NULL,       -- no order id of this node id is of a later millisecond (node clock, since 1970)
  renewed_at           timestamptz NOT NULL
);
