-- Disk lifecycle (issue 15): what each session's worktree takes as last measured, whether its
-- directory was reclaimed, and each project's worktree budget and reclaim age.
ALTER TABLE sessions ADD COLUMN disk_bytes INTEGER;
ALTER TABLE sessions ADD COLUMN build_bytes INTEGER;
ALTER TABLE sessions ADD COLUMN disk_measured_at INTEGER;
ALTER TABLE sessions ADD COLUMN worktree_reclaimed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN budget_bytes INTEGER;
ALTER TABLE projects ADD COLUMN reclaim_after_secs INTEGER;
