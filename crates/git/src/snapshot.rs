//! Snapshots of a checkout's working tree (committed, staged, unstaged and untracked work) as a
//! tree or commit object, built in a temporary index so the checkout's own index is never touched.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{GitError, Result};
use crate::runner::{Checkout, git};

/// A private index file, deleted (with any leftover lock) when dropped.
#[derive(Debug)]
pub(crate) struct TempIndex {
    path: PathBuf,
}

impl TempIndex {
    /// A copy of the checkout's real index, next to it in the checkout's own git dir (not in a
    /// shared temp dir). Copying keeps git's stat cache, so `git add -A` only rehashes files
    /// that changed instead of every file in the tree. The agent can write that dir too, so the
    /// copy is created new (`O_EXCL`, never through a symlink it planted).
    fn copy_of(checkout: &Checkout) -> Result<TempIndex> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let real = checkout.git_dir.join("index");
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("nucleic-index-{}-{n}", std::process::id());
        let temp = TempIndex { path: checkout.git_dir.join(name) };
        temp.remove();
        let bytes = match std::fs::read(&real) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(temp),
            Err(e) => return Err(GitError::io("cannot read index", &real, e)),
        };
        // The copy keeps the index's mtime: git trusts the cached stat of an entry only when
        // it is older than the index file ("racy git"); a copy stamped now would make a
        // same-size edit from the index's last second look unchanged.
        let stamp = std::fs::metadata(&real)
            .and_then(|m| m.modified())
            .map_err(|e| GitError::io("cannot read index", &real, e))?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp.path)
            .and_then(|mut file| {
                file.write_all(&bytes)?;
                file.set_modified(stamp)
            })
            .map_err(|e| GitError::io("cannot copy index to", &temp.path, e))?;
        Ok(temp)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(self.path.with_extension("lock"));
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The state of a checkout's working tree, as objects.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// The commit HEAD points to.
    pub head: String,
    /// HEAD's tree.
    pub head_tree: String,
    /// The tree of the working tree as `git add -A` would stage it (ignored files excluded).
    pub tree: String,
}

impl Snapshot {
    /// Whether the working tree matches HEAD (no uncommitted or untracked work).
    pub(crate) fn is_clean(&self) -> bool {
        self.tree == self.head_tree
    }
}

/// What a snapshot does with a path git cannot index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unindexable {
    /// Leave it out (views of the work: diffs, previews, turn snapshots).
    Skip,
    /// Fail (snapshots that become history).
    Fail,
}

/// Writes the working tree of `checkout` as a tree object, via a temporary index, with HEAD.
pub(crate) fn snapshot(checkout: &Checkout, unindexable: Unindexable) -> Result<Snapshot> {
    let heads = git(checkout).args(["rev-parse", "HEAD", "HEAD^{tree}"]).read_only().run_text()?;
    let mut lines = heads.lines().map(str::to_owned);
    let (Some(head), Some(head_tree)) = (lines.next(), lines.next()) else {
        return Err(GitError::UnknownRef { reference: "HEAD".to_owned() });
    };
    let tree = working_tree(checkout, unindexable)?;
    Ok(Snapshot { head, head_tree, tree })
}

/// The tree of the working tree of `checkout` as `git add -A` would stage it, written in a
/// temporary index (the checkout's own index is never touched).
pub(crate) fn working_tree(checkout: &Checkout, unindexable: Unindexable) -> Result<String> {
    let index = TempIndex::copy_of(checkout)?;
    // `--ignore-errors` (views only): a path git cannot index (a nested repository with no
    // commit checked out, which an agent plants with a two-line `.git` file; an unreadable
    // file) is left out instead of failing the whole snapshot; git exits 1 then, having
    // written the rest.
    let mut add = git(checkout).args(["add", "-A"]).index_file(index.path());
    if unindexable == Unindexable::Skip {
        add = add.arg("--ignore-errors");
    }
    let added = add.output()?;
    let tolerated = unindexable == Unindexable::Skip && added.code == Some(1);
    if added.code != Some(0) && !tolerated {
        return Err(add.failure(added));
    }
    git(checkout).arg("write-tree").index_file(index.path()).run_text()
}

/// Who a snapshot commit is attributed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Author {
    /// A fixed identity, unsigned: for throwaway commits no ref will point at.
    Throwaway,
    /// The user's configured identity (never signed: see `docs/security.md`): for commits that
    /// become history.
    User,
}

/// A commit holding everything in the working tree of `checkout`, whose parent is HEAD; HEAD
/// itself when there is no uncommitted work. No ref is moved.
pub(crate) fn snapshot_commit(
    checkout: &Checkout,
    message: &str,
    author: Author,
) -> Result<String> {
    let unindexable = match author {
        Author::Throwaway => Unindexable::Skip,
        Author::User => Unindexable::Fail,
    };
    let snap = snapshot(checkout, unindexable)?;
    commit_of(checkout, &snap, message, author)
}

/// A commit of `snap` (see [`snapshot_commit`]).
pub(crate) fn commit_of(
    checkout: &Checkout,
    snap: &Snapshot,
    message: &str,
    author: Author,
) -> Result<String> {
    if snap.is_clean() {
        return Ok(snap.head.clone());
    }
    let mut command = git(checkout).args([
        "commit-tree",
        "--no-gpg-sign",
        &snap.tree,
        "-p",
        &snap.head,
        "-m",
        message,
    ]);
    if author == Author::Throwaway {
        command = command.snapshot_identity();
    }
    command.run_text()
}
