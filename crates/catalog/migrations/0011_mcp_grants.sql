-- MCP principals (issue 30): what the person granted a named MCP client, the SHA-256 of its
-- credential (the credential itself is never stored), and the session it is the agent of.
CREATE TABLE mcp_grants (
    name TEXT PRIMARY KEY,
    scopes TEXT NOT NULL,
    session_id TEXT,
    credential_sha256 BLOB NOT NULL UNIQUE,
    granted_at INTEGER NOT NULL,
    revoked_at INTEGER
);
-- The session whose agent started this one (through an MCP grant bound to it).
ALTER TABLE sessions ADD COLUMN parent_session_id TEXT;
