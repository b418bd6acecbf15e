//! Reclaiming a finished session's worktree directory (its branch stays) and bringing it back
//! when the session continues, with any uncommitted work kept in between.

use crate::error::{GitError, Result};
use crate::repo::Repo;
use crate::runner::git;
use crate::snapshot::{Author, commit_of, snapshot};
use crate::worktree::{Worktree, restore_gitlink};

/// Where the uncommitted work of a reclaimed worktree is kept, per worktree directory name.
pub const RECLAIMED_REF_PREFIX: &str = "refs/nucleic/reclaimed/";

/// What reclaiming kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reclaimed {
    /// The commit holding the uncommitted work (untracked files included, ignored ones not),
    /// under [`RECLAIMED_REF_PREFIX`]; `None` when the worktree was clean.
    pub uncommitted: Option<String>,
}

fn reclaimed_ref(worktree: &Worktree) -> Result<String> {
    let slug = worktree
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| GitError::WorktreeMissing { path: worktree.path.clone() })?;
    Ok(format!("{RECLAIMED_REF_PREFIX}{slug}"))
}

impl Repo {
    /// Removes the worktree's directory and keeps its branch. Uncommitted work is first kept as
    /// a commit (never on the branch) that [`Repo::restore`] puts back; ignored files (build
    /// output, dependencies) are not kept.
    pub fn reclaim(&self, worktree: &Worktree) -> Result<Reclaimed> {
        let checkout = self.session(worktree)?;
        let keep_as = reclaimed_ref(worktree)?;
        let snap = snapshot(&checkout)?;
        let uncommitted = if snap.is_clean() {
            None
        } else {
            let message = format!("nucleic: uncommitted work of {} (reclaimed)", worktree.branch);
            Some(commit_of(&checkout, &snap, &message, Author::Throwaway)?)
        };
        let _guard = self.lock_mutations();
        if let Some(commit) = &uncommitted {
            git(self.main()).args(["update-ref", &keep_as, commit]).run()?;
        }
        // Git checks that the worktree's `.git` points back before removing it.
        restore_gitlink(&checkout)?;
        git(self.main())
            .args(["worktree", "remove", "--force", "--force"])
            .arg(&worktree.path)
            .run()?;
        Ok(Reclaimed { uncommitted })
    }

    /// Checks the worktree's branch out again at its recorded path, with the uncommitted work
    /// kept when it was reclaimed (as uncommitted work again). Returns whether there was some.
    pub fn restore(&self, worktree: &Worktree) -> Result<bool> {
        let kept_ref = reclaimed_ref(worktree)?;
        {
            let _guard = self.lock_mutations();
            if std::fs::symlink_metadata(&worktree.path).is_ok() {
                return Err(GitError::PathExists { path: worktree.path.clone() });
            }
            if !self.branch_exists(&worktree.branch)? {
                return Err(GitError::UnknownRef { reference: worktree.branch.clone() });
            }
            git(self.main()).args(["worktree", "prune"]).run()?;
            self.ensure_excluded()?;
            git(self.main())
                .args(["worktree", "add", "--quiet"])
                .arg(&worktree.path)
                .arg(&worktree.branch)
                .run()?;
        }
        let checkout = self.session(worktree)?;
        let kept = git(self.main())
            .args(["rev-parse", "--verify", "--quiet", "--end-of-options", &kept_ref])
            .read_only()
            .run_text()
            .ok()
            .filter(|sha| !sha.is_empty());
        let Some(kept) = kept else { return Ok(false) };
        // The kept tree into index and files, then the index back to HEAD: the work is
        // uncommitted again, untracked files untracked.
        git(&checkout).args(["read-tree", "--reset", "-u", &kept]).run()?;
        git(&checkout).args(["reset", "--quiet"]).run()?;
        let _guard = self.lock_mutations();
        git(self.main()).args(["update-ref", "-d", &kept_ref]).run()?;
        Ok(true)
    }
}
