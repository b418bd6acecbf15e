-- Nucleic catalog, schema 1. An index only: every session row can be rebuilt from its transcript.
-- Timestamps are unix milliseconds.

CREATE TABLE projects (
    id                 TEXT PRIMARY KEY NOT NULL,
    name               TEXT NOT NULL,
    root               TEXT NOT NULL UNIQUE,
    default_branch     TEXT NOT NULL,
    default_backend    TEXT NOT NULL,
    setup_script       TEXT,
    setup_timeout_secs INTEGER,
    copy_files         TEXT NOT NULL, -- JSON array of relative paths
    created_at         INTEGER NOT NULL
) STRICT;

CREATE TABLE sessions (
    id                   TEXT PRIMARY KEY NOT NULL,
    -- SET NULL: an archived session may outlive its project (remove_project refuses live ones).
    project_id           TEXT REFERENCES projects(id) ON DELETE SET NULL,
    title                TEXT NOT NULL,
    backend              TEXT NOT NULL,
    model                TEXT,
    permission_mode      TEXT,
    status               TEXT NOT NULL,
    backend_session_id   TEXT,
    cwd                  TEXT NOT NULL,
    worktree_path        TEXT,
    branch               TEXT,
    base_ref             TEXT,
    base_sha             TEXT,
    transcript           TEXT NOT NULL,
    last_seq             INTEGER NOT NULL,
    pending_approvals    INTEGER NOT NULL DEFAULT 0,
    cost_usd             REAL NOT NULL DEFAULT 0,
    outcome              TEXT,
    archived             INTEGER NOT NULL DEFAULT 0,
    read_only            INTEGER NOT NULL DEFAULT 0,
    continues_session_id TEXT,
    agent_pid            INTEGER,
    agent_start_ticks    INTEGER, -- /proc/<pid>/stat starttime: tells an orphan from a recycled pid
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL
) STRICT;

CREATE INDEX sessions_project ON sessions(project_id);
CREATE INDEX sessions_updated ON sessions(updated_at DESC);

CREATE TABLE approvals (
    -- Deferred: a fold inserts approvals before it writes the (possibly new) session row.
    session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    request_id    TEXT NOT NULL,
    tool_name     TEXT NOT NULL,
    input         TEXT NOT NULL, -- JSON
    requested_seq INTEGER NOT NULL,
    decision      TEXT,
    decided_by    TEXT,
    resolved_seq  INTEGER,
    PRIMARY KEY (session_id, request_id)
) STRICT;

CREATE TABLE devices (
    id           TEXT PRIMARY KEY NOT NULL,
    name         TEXT NOT NULL,
    public_key   BLOB,
    paired_at    INTEGER NOT NULL,
    last_seen_at INTEGER,
    revoked_at   INTEGER
) STRICT;

CREATE TABLE client_messages (
    client_id  TEXT NOT NULL,
    message_id TEXT NOT NULL,
    response   TEXT NOT NULL, -- JSON
    at         INTEGER NOT NULL,
    PRIMARY KEY (client_id, message_id)
) STRICT;

CREATE INDEX client_messages_at ON client_messages(at);
