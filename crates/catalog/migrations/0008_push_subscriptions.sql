-- Nucleic catalog, schema 6: a device's Web Push subscription (at most one per device) and its
-- quiet hours. Rows go with their device: revoking a device deletes them (catalog devices.rs),
-- and a deleted device row takes them along.

CREATE TABLE push_subscriptions (
    device_id   TEXT PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
    endpoint    TEXT NOT NULL,
    p256dh      BLOB NOT NULL,
    auth        BLOB NOT NULL,
    quiet_from  INTEGER,
    quiet_to    INTEGER,
    utc_offset  INTEGER,
    created_at  INTEGER NOT NULL
) STRICT;
