-- The BRIN indexes that retention reads by age summarize each range of pages once it fills (decision 0041).
-- A range is summarized only by a vacuum, or by a request autosummarize makes when the next range starts, which
-- autovacuum carries out within its naptime (a minute by default). Unsummarized, a range matches every search, so a
-- retention pass that found nothing to delete read every page written since the table's last vacuum: 220-365 ms a
-- statement behind a million fresh events, 1.1 s each under a close storm, every 60 s; and more for a table as large
-- as a day of events, which autovacuum leaves alone for hours.
ALTER INDEX outbox_by_age SET (autosummarize = on);
ALTER INDEX order_log_by_time SET (autosummarize = on);
ALTER INDEX idempotency_keys_by_time SET (autosummarize = on);
