-- Nucleic catalog, schema 2: a device may be a signed-in browser, known by the SHA-256 (hex) of
-- its session cookie; the secret itself is never stored.

ALTER TABLE devices ADD COLUMN session_hash TEXT;

CREATE UNIQUE INDEX devices_session_hash ON devices(session_hash) WHERE session_hash IS NOT NULL;
