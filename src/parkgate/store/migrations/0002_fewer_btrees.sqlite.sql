-- parkgate schema v2 (SQLite). Fewer b-trees written per message.
-- inbound_messages becomes a WITHOUT ROWID table: the row lives in its primary-key
-- b-tree, so recording a message writes one b-tree instead of a table and its index.
CREATE TABLE inbound_messages_v2 (
    conversation_id TEXT NOT NULL,
    message_id      TEXT NOT NULL,
    reply           TEXT NOT NULL,
    received_at     TEXT NOT NULL,
    PRIMARY KEY (conversation_id, message_id)
) WITHOUT ROWID;
INSERT INTO inbound_messages_v2 (conversation_id, message_id, reply, received_at)
    SELECT conversation_id, message_id, reply, received_at FROM inbound_messages;
DROP TABLE inbound_messages;
ALTER TABLE inbound_messages_v2 RENAME TO inbound_messages;
-- No query reads asks by run_id: the index only cost a write on every parked ask.
DROP INDEX asks_by_run;
