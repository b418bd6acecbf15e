//! Snapshots of a checkout's working tree (committed, staged, unstaged and untracked work) as a
//! tree or commit object, built in a temporary index so the checkout's own index is never touched.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::error::{GitError, Result};
use crate::objects::Objects;
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
    ///
    /// For views (`Unindexable::Skip`) an index with entries git trusts without looking at the
    /// file (assume-unchanged, skip-worktree: [`crate::index::can_seed`]) is not copied — the
    /// agent could mark a file so to hide its edits from every diff — and git starts from an
    /// empty index (every file hashed).
    fn copy_of(checkout: &Checkout, unindexable: Unindexable) -> Result<TempIndex> {
        let temp = TempIndex { path: checkout.git_dir.join(temp_name("nucleic-index")) };
        temp.remove();
        copy_index(&checkout.git_dir.join("index"), &temp.path)?;
        if unindexable == Unindexable::Skip {
            let hash_len = checkout.empty_tree.len() / 2;
            let bytes = std::fs::read(&temp.path).unwrap_or_default();
            if !bytes.is_empty() && !crate::index::can_seed(&bytes, hash_len) {
                temp.remove();
            }
        }
        Ok(temp)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(lock_of(&self.path));
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        self.remove();
    }
}

/// `<pid>-<n>` names no other writer uses.
fn temp_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

/// The lock git takes to write the index file `index`: `<index>.lock`.
fn lock_of(index: &Path) -> PathBuf {
    let mut lock = index.as_os_str().to_owned();
    lock.push(".lock");
    PathBuf::from(lock)
}

/// Copies the index file `real` to a new file `dest` (`O_EXCL`, 0600) with `real`'s mtime: git
/// trusts the cached stat of an entry only when it is older than the index file ("racy git"); a
/// copy stamped now would make a same-size edit from the index's last second look unchanged.
/// Nothing is created when there is no `real` (git starts from an empty index then).
fn copy_index(real: &Path, dest: &Path) -> Result<()> {
    let bytes = match std::fs::read(real) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(GitError::io("cannot read index", real, e)),
    };
    let stamp = std::fs::metadata(real)
        .and_then(|m| m.modified())
        .map_err(|e| GitError::io("cannot read index", real, e))?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)
        .and_then(|mut file| {
            file.write_all(&bytes)?;
            file.set_modified(stamp)
        })
        .map_err(|e| GitError::io("cannot copy index to", dest, e))
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
/// temporary index (the checkout's own index is never touched). One git process (`add`); the
/// tree objects are written in-process ([`tree_of_index`]).
pub(crate) fn working_tree(checkout: &Checkout, unindexable: Unindexable) -> Result<String> {
    let index = TempIndex::copy_of(checkout, unindexable)?;
    add_all(checkout, index.path(), unindexable, false)?;
    tree_of_index(checkout, index.path())
}

/// [`working_tree`] with a snapshot index kept from one snapshot to the next at `index` (a
/// path the host owns, outside the agent's reach): `git add -A` rehashes only the files that
/// changed since the previous snapshot, whatever the agent staged or not. Started from a copy
/// of the checkout's own index when there is none yet; a leftover lock (the host or git killed
/// mid-snapshot) is removed first, and an index git cannot read is started afresh once.
pub(crate) fn working_tree_kept(checkout: &Checkout, index: &Path) -> Result<String> {
    let serial = kept_index_lock(index);
    let _serial = serial.lock().unwrap_or_else(PoisonError::into_inner);
    // This process is the only writer of `index` (the lock above, and one host per state dir):
    // a lock file there is a leftover.
    let _ = std::fs::remove_file(lock_of(index));
    if std::fs::symlink_metadata(index).is_err() {
        seed_kept_index(checkout, index)?;
    }
    match add_all(checkout, index, Unindexable::Skip, true) {
        Ok(()) => {}
        Err(GitError::Command { stderr, .. }) if stderr.contains("index") => {
            let _ = std::fs::remove_file(index);
            let _ = std::fs::remove_file(lock_of(index));
            seed_kept_index(checkout, index)?;
            add_all(checkout, index, Unindexable::Skip, true)?;
        }
        Err(e) => return Err(e),
    }
    tree_of_index(checkout, index)
}

/// Serializes the users of one kept snapshot index in this process.
fn kept_index_lock(index: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks =
        LOCKS.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner);
    locks.entry(index.to_path_buf()).or_default().clone()
}

/// Starts a kept index as a copy of the checkout's own index, whole or not at all (written
/// aside and renamed into place). The agent writes that index: one with entries git would
/// trust without looking at the file ([`crate::index::can_seed`]) is not copied, and the kept
/// index starts empty (the first snapshot hashes every file).
fn seed_kept_index(checkout: &Checkout, index: &Path) -> Result<()> {
    let mut aside = index.as_os_str().to_owned();
    aside.push(format!(".{}", temp_name("seed")));
    let aside = PathBuf::from(aside);
    copy_index(&checkout.git_dir.join("index"), &aside)?;
    let hash_len = checkout.empty_tree.len() / 2;
    let trusted = std::fs::read(&aside).is_ok_and(|b| crate::index::can_seed(&b, hash_len));
    if !trusted {
        let _ = std::fs::remove_file(&aside);
        return Ok(());
    }
    if std::fs::symlink_metadata(&aside).is_ok() {
        std::fs::rename(&aside, index).map_err(|e| {
            let _ = std::fs::remove_file(&aside);
            GitError::io("cannot create snapshot index", index, e)
        })?;
    }
    Ok(())
}

/// `git add -A` of the whole worktree into `index`. `--ignore-errors` (views only): a path git
/// cannot index (a nested repository with no commit checked out, which an agent plants with a
/// two-line `.git` file; an unreadable file) is left out instead of failing the whole snapshot;
/// git exits 1 then, having written the rest. A `kept` index also gets git's untracked cache
/// (unchanged directories are not read again) and no trailing checksum (nothing but the host
/// reads it), and is never split.
fn add_all(checkout: &Checkout, index: &Path, unindexable: Unindexable, kept: bool) -> Result<()> {
    // Whatever the repository's config says, a file counts as unchanged only when its whole
    // stat matches — ctime included, which no writer can set back — and nothing is added
    // marked assume-unchanged.
    let mut add =
        git(checkout).args(["-c", "core.checkStat=default", "-c", "core.trustctime=true"]);
    add = add.args(["-c", "core.ignoreStat=false"]);
    if kept {
        add = add.args(["-c", "core.untrackedCache=true", "-c", "index.skipHash=true"]);
        add = add.args(["-c", "core.splitIndex=false"]);
    }
    add = add.args(["add", "-A"]).index_file(index);
    if unindexable == Unindexable::Skip {
        add = add.arg("--ignore-errors");
    }
    let added = add.output()?;
    let tolerated = unindexable == Unindexable::Skip && added.code == Some(1);
    if added.code != Some(0) && !tolerated {
        return Err(add.failure(added));
    }
    Ok(())
}

/// The tree of the entries in `index`, written in-process from the index file (no git
/// process); an index the reader does not take on (unmerged or intent-to-add entries, a sparse
/// or split index) is left to `git write-tree`.
fn tree_of_index(checkout: &Checkout, index: &Path) -> Result<String> {
    let hash_len = checkout.empty_tree.len() / 2;
    match crate::index::read(index, hash_len) {
        Ok(Ok(entries)) => {
            if let Ok(tree) = Objects::new(&checkout.common_dir, hash_len).write_trees(&entries)? {
                return Ok(tree);
            }
        }
        Ok(Err(_unsupported)) => {}
        // No index at all: git wrote none (nothing to add); git says what it makes of that.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(GitError::io("cannot read index", index, e)),
    }
    git(checkout).arg("write-tree").index_file(index).run_text()
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
