//! Opened repositories kept for the life of the process, re-discovered when anything
//! discovery read has changed.
//!
//! `Repo::open` asks git (two `rev-parse`) for the main checkout's root, git dir, common dir
//! and object format. What git reads to answer is: the path's `.git` (a directory, or a gitlink
//! file naming one), that git dir's `commondir` and `config.worktree`, and the common dir's
//! `config` (`core.bare`, `core.worktree`, `extensions.objectFormat`). A kept answer is reused
//! only while every one of these is the same file, unchanged: same device, inode, type, size,
//! mtime and ctime (ctime cannot be set back by a writer), or still absent; and while the root,
//! git dir and common dir are the same directories (device and inode). Anything else — a `.git`
//! replaced or rewritten, a config edited (a planted `core.fsmonitor`, an `include.path`), a
//! `commondir` written — and the next open asks git again, with all of `Repo::open`'s checks.
//! An answer whose files changed while git read them (ctime within [`RACY`] of the start) is
//! not kept.
//!
//! Not followed: files a config includes. What they could change is the same three answers,
//! and every command names its locations explicitly and locks what runs programs whatever any
//! config says (`runner.rs`), so a kept answer is as safe as a fresh one; it is the one the
//! person's root gave when the project was registered.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::repo::Repo;

/// How close to the start of discovery a change makes the answer too fresh to keep (the
/// kernel's file times are coarse: a few ms behind the clock).
const RACY: Duration = Duration::from_millis(50);

/// What one file or directory looked like: `None` when absent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp(Option<[i64; 8]>);

impl Stamp {
    /// The whole state of a file (identity, type, size, mtime, ctime).
    fn of(path: &Path) -> Stamp {
        Stamp(std::fs::symlink_metadata(path).ok().map(|m| {
            [
                m.dev() as i64,
                m.ino() as i64,
                i64::from(m.mode()),
                m.size() as i64,
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ]
        }))
    }

    /// Only which directory (or file) it is: a git dir's own mtime moves at every `index.lock`.
    fn identity(path: &Path) -> Stamp {
        Stamp(
            std::fs::symlink_metadata(path)
                .ok()
                .map(|m| [m.dev() as i64, m.ino() as i64, i64::from(m.mode()), 0, 0, 0, 0, 0]),
        )
    }

    fn changed_after(&self, when: SystemTime) -> bool {
        let Some(s) = self.0 else { return false };
        let ctime =
            Duration::new(u64::try_from(s[6]).unwrap_or(0), u32::try_from(s[7]).unwrap_or(0));
        let since = when.duration_since(UNIX_EPOCH).unwrap_or_default();
        ctime + RACY >= since
    }
}

/// Everything discovery depends on for one opened repository.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint(Vec<Stamp>);

fn fingerprint(path: &Path, repo: &Repo) -> Fingerprint {
    let main = repo.main();
    let dot_git = path.join(".git");
    let dot_git_stamp = match std::fs::symlink_metadata(&dot_git) {
        Ok(m) if m.is_dir() => Stamp::identity(&dot_git),
        _ => Stamp::of(&dot_git),
    };
    Fingerprint(vec![
        Stamp::identity(path),
        dot_git_stamp,
        Stamp::identity(&main.git_dir),
        Stamp::of(&main.git_dir.join("commondir")),
        Stamp::of(&main.git_dir.join("config.worktree")),
        Stamp::identity(&main.common_dir),
        Stamp::of(&main.common_dir.join("config")),
    ])
}

type Kept = HashMap<PathBuf, (Fingerprint, Repo)>;

fn kept() -> std::sync::MutexGuard<'static, Kept> {
    static KEPT: OnceLock<Mutex<Kept>> = OnceLock::new();
    KEPT.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner)
}

/// The repository opened at `path` before, if nothing its discovery read has changed since.
pub(crate) fn lookup(path: &Path) -> Option<Repo> {
    let (print, repo) = kept().get(path).cloned()?;
    (fingerprint(path, &repo) == print).then_some(repo)
}

/// Keeps `repo`, discovered at `path` from `started` on, when `path` is its root (a path inside
/// a checkout is not kept: more directories decide what it opens) and nothing discovery read
/// changed while it ran.
pub(crate) fn keep(path: &Path, repo: &Repo, started: SystemTime) {
    if repo.root() != path {
        return;
    }
    let print = fingerprint(path, repo);
    if print.0.iter().any(|s| s.changed_after(started)) {
        kept().remove(path);
        return;
    }
    kept().insert(path.to_path_buf(), (print, repo.clone()));
}
