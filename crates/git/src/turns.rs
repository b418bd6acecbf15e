//! Per-turn snapshots: a worktree's state at a turn boundary as a tree object, kept alive by a
//! ref under `refs/nucleic/turns/` (never the session branch, its index or HEAD), and what
//! changed between two of them.

use std::path::{Component, Path};

use crate::diff::{Diff, tree_diff};
use crate::error::{GitError, Result};
use crate::objects::{RefWrite, write_ref};
use crate::repo::Repo;
use crate::runner::git;
use crate::snapshot::{Unindexable, working_tree, working_tree_kept};
use crate::worktree::Worktree;

/// Where snapshot refs live: `refs/nucleic/turns/<key>/<name>`.
pub const SNAPSHOT_REF_PREFIX: &str = "refs/nucleic/turns";

impl Repo {
    /// Writes the working tree of `worktree` (committed, staged, unstaged and untracked work;
    /// ignored files left out) as a tree object in a temporary index, and points
    /// `refs/nucleic/turns/<key>/<name>` at it so that git keeps it. Nothing else moves: no
    /// commit is made, the session branch, its index and HEAD stay as they are. The tree's id.
    ///
    /// One git process (`git add -A` into a copy of the worktree's index); the trees and the
    /// ref are written in-process (`objects.rs`).
    pub fn record_snapshot(&self, worktree: &Worktree, key: &str, name: &str) -> Result<String> {
        let reference = snapshot_ref(key, Some(name))?;
        let tree = self.snapshot_tree(worktree)?;
        self.point_ref(&reference, &tree)?;
        Ok(tree)
    }

    /// [`Repo::record_snapshot`] with a snapshot index kept at `index` from one snapshot of
    /// this worktree to the next (a file the caller owns, in a directory the agent cannot
    /// write; created on first use from a copy of the worktree's index): only the files that
    /// changed since the previous snapshot are hashed. One git process.
    pub fn record_snapshot_kept(
        &self,
        worktree: &Worktree,
        key: &str,
        name: &str,
        index: &Path,
    ) -> Result<String> {
        let reference = snapshot_ref(key, Some(name))?;
        let dir = self.session(worktree)?;
        let tree = working_tree_kept(&dir, index)?;
        self.point_ref(&reference, &tree)?;
        Ok(tree)
    }

    /// Like [`Repo::record_snapshot`] for a worktree known to hold exactly `commit`'s tree (a
    /// clean pooled worktree just handed out): the commit's tree, without reading the worktree.
    pub fn record_commit_tree(&self, commit: &str, key: &str, name: &str) -> Result<String> {
        let reference = snapshot_ref(key, Some(name))?;
        let spec = format!("{}^{{tree}}", object_id(commit)?);
        let tree =
            git(self.main()).args(["rev-parse", "--verify", &spec]).read_only().run_text()?;
        self.point_ref(&reference, &tree)?;
        Ok(tree)
    }

    /// Records `tree` (a tree an earlier snapshot of this repository wrote) as the snapshot
    /// `refs/nucleic/turns/<key>/<name>`, without reading any worktree and without a git
    /// process: for a boundary the caller knows left the worktree as it was at that snapshot.
    pub fn record_tree(&self, tree: &str, key: &str, name: &str) -> Result<String> {
        let reference = snapshot_ref(key, Some(name))?;
        self.point_ref(&reference, tree)?;
        Ok(tree.to_owned())
    }

    /// Points the snapshot ref `reference` at `tree`: the loose ref written in-process, or
    /// `git update-ref` where refs are not loose files (reftable).
    fn point_ref(&self, reference: &str, tree: &str) -> Result<()> {
        let tree = object_id(tree)?;
        if write_ref(self.common_dir(), reference, tree)? == RefWrite::NotLoose {
            git(self.main()).args(["update-ref", "--no-deref", reference, tree]).run()?;
        }
        Ok(())
    }

    /// The working tree of `worktree` now, as a tree object (no ref keeps it).
    pub fn snapshot_tree(&self, worktree: &Worktree) -> Result<String> {
        let dir = self.session(worktree)?;
        working_tree(&dir, Unindexable::Skip)
    }

    /// What changed from tree (or commit) `from` to `to`, both object ids: files and patch.
    pub fn diff_trees(&self, from: &str, to: &str) -> Result<Diff> {
        let (from, to) = (object_id(from)?, object_id(to)?);
        tree_diff(self.main(), from, to)
    }

    /// The contents of the file at `path` in tree `tree`: `None` when the tree has no file
    /// there (nothing, a directory or a submodule), an error when it is larger than
    /// `max_bytes`. `path` is relative and plain (no `.` or `..` parts).
    pub fn file_in_tree(&self, tree: &str, path: &Path, max_bytes: u64) -> Result<Option<Vec<u8>>> {
        let tree = object_id(tree)?;
        let plain = !path.as_os_str().is_empty()
            && path.components().all(|c| matches!(c, Component::Normal(_)));
        let text = path.to_str().filter(|p| plain && !p.contains('\0'));
        let Some(text) = text else {
            return Err(GitError::PathEscape { path: path.to_path_buf() });
        };
        let spec = format!("{tree}:{text}");
        let kind = git(self.main()).args(["cat-file", "-t", &spec]).read_only().output()?;
        if kind.code != Some(0) || String::from_utf8_lossy(&kind.stdout).trim() != "blob" {
            return Ok(None);
        }
        let size = git(self.main()).args(["cat-file", "-s", &spec]).read_only().run_text()?;
        let size: u64 = size.parse().unwrap_or(u64::MAX);
        if size > max_bytes {
            return Err(GitError::TooLarge { path: path.to_path_buf(), size, max: max_bytes });
        }
        git(self.main()).args(["cat-file", "blob", &spec]).read_only().run().map(Some)
    }

    /// The tree `refs/nucleic/turns/<key>/<name>` points to, if that ref exists.
    pub fn snapshot_at(&self, key: &str, name: &str) -> Result<Option<String>> {
        let reference = snapshot_ref(key, Some(name))?;
        let out = git(self.main())
            .args(["rev-parse", "--verify", "--quiet", "--end-of-options", &reference])
            .read_only()
            .output()?;
        Ok((out.code == Some(0)).then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// Deletes every snapshot ref of `key` (git may then prune their trees); how many.
    pub fn drop_snapshots(&self, key: &str) -> Result<usize> {
        let prefix = snapshot_ref(key, None)?;
        let refs = self.refs_under(&format!("{prefix}/"))?;
        for reference in &refs {
            git(self.main()).args(["update-ref", "--no-deref", "-d", reference]).run()?;
        }
        Ok(refs.len())
    }

    /// The keys that have snapshot refs (for cleaning up after sessions that are gone).
    pub fn snapshot_keys(&self) -> Result<Vec<String>> {
        let prefix = format!("{SNAPSHOT_REF_PREFIX}/");
        let mut keys: Vec<String> = self
            .refs_under(&prefix)?
            .iter()
            .filter_map(|r| r.strip_prefix(&prefix)?.split('/').next().map(str::to_owned))
            .collect();
        keys.dedup();
        Ok(keys)
    }

    fn refs_under(&self, prefix: &str) -> Result<Vec<String>> {
        let out = git(self.main())
            .args(["for-each-ref", "--format=%(refname)", prefix])
            .read_only()
            .run_text()?;
        Ok(out.lines().filter(|l| !l.is_empty()).map(str::to_owned).collect())
    }
}

/// `refs/nucleic/turns/<key>[/<name>]`, refusing parts that are not plain names.
fn snapshot_ref(key: &str, name: Option<&str>) -> Result<String> {
    let plain = |part: &str| {
        !part.is_empty()
            && part.len() <= 100
            && !part.starts_with(['-', '.'])
            && part.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !part.contains("..")
            && !part.ends_with(".lock")
    };
    for part in std::iter::once(key).chain(name) {
        if !plain(part) {
            return Err(GitError::UnknownRef { reference: part.to_owned() });
        }
    }
    Ok(match name {
        Some(name) => format!("{SNAPSHOT_REF_PREFIX}/{key}/{name}"),
        None => format!("{SNAPSHOT_REF_PREFIX}/{key}"),
    })
}

/// `id` when it is a full object id (40 or 64 lowercase hex digits), never an option or a
/// revision expression.
fn object_id(id: &str) -> Result<&str> {
    let hex = id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if hex && (id.len() == 40 || id.len() == 64) {
        Ok(id)
    } else {
        Err(GitError::UnknownRef { reference: id.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_refs_take_plain_names_only() {
        assert_eq!(
            snapshot_ref("abc-1", Some("2-end")).ok().as_deref(),
            Some("refs/nucleic/turns/abc-1/2-end")
        );
        for bad in ["", "..", "a/b", "-x", "a..b", "x.lock", "a b", "ü"] {
            assert!(snapshot_ref(bad, Some("1")).is_err(), "{bad:?}");
            assert!(snapshot_ref("k", Some(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn object_ids_are_full_hex() {
        assert!(object_id(&"a".repeat(40)).is_ok());
        assert!(object_id(&"0".repeat(64)).is_ok());
        for bad in ["HEAD", "--output=x", "abc", &"A".repeat(40), &"a".repeat(41)] {
            assert!(object_id(bad).is_err(), "{bad:?}");
        }
    }
}
