-- Which webhooks each node delivers to, as a fingerprint of their configuration (url, event types, client): every
-- node makes the deliveries of the events it dispatches from its own list, and sends those of the shards it owns, so
-- nodes with different lists skip webhooks or leave deliveries unsent. Each node writes its fingerprint with its
-- lease; the WEBHOOKS_DIFFER alarm fires while a live node's differs. NULL until a node of this version holds the id.
ALTER TABLE node_leases ADD COLUMN webhooks text;
