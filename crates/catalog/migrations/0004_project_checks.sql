-- Nucleic catalog, schema 4: a project's checks (commands the host runs itself: tests, lint,
-- build), as a JSON array of `CheckSpec`, and whether they run after every turn.
ALTER TABLE projects ADD COLUMN checks TEXT NOT NULL DEFAULT '[]';
ALTER TABLE projects ADD COLUMN checks_after_turn INTEGER NOT NULL DEFAULT 0;
