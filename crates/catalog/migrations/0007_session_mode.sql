-- A session's policy mode (readonly / edit / full), from sessionCreated and sessionUpdated.
ALTER TABLE sessions ADD COLUMN mode TEXT;
