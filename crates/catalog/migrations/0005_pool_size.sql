-- Warm worktree pool per project: how many worktrees are prepared ahead (0 turns it off).
ALTER TABLE projects ADD COLUMN pool_size INTEGER NOT NULL DEFAULT 2;
