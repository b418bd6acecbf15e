//! Noticing any change to a pooled worktree without a `git status`: an inotify watch on each of
//! its directories, read (without waiting) when a session takes it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

/// Watches below one pooled worktree; dropping it removes them all (the descriptor closes).
#[derive(Debug)]
pub(crate) struct Watch {
    inotify: Inotify,
    /// Sticky: once something changed, it stays changed.
    changed: AtomicBool,
}

/// What a pooled worktree may not see happen without being discarded.
fn interesting() -> AddWatchFlags {
    AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_DONT_FOLLOW
        | AddWatchFlags::IN_ONLYDIR
}

impl Watch {
    /// Watches every directory below `root` (symlinks not followed). `None` when inotify is
    /// unavailable or its limits are reached: the caller then checks in full before use.
    pub(crate) fn start(root: &Path) -> Option<Watch> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let mut stack: Vec<PathBuf> = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            inotify.add_watch(&dir, interesting()).ok()?;
            let entries = std::fs::read_dir(&dir).ok()?;
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(entry.path());
                }
            }
        }
        Some(Watch { inotify, changed: AtomicBool::new(false) })
    }

    /// Whether anything below the root changed since [`Watch::start`] (never waits).
    pub(crate) fn changed(&self) -> bool {
        if self.changed.load(Ordering::SeqCst) {
            return true;
        }
        let seen = match self.inotify.read_events() {
            Ok(events) => !events.is_empty(),
            Err(nix::errno::Errno::EAGAIN) => false,
            // An overflowed or broken watch cannot vouch for anything.
            Err(_) => true,
        };
        if seen {
            self.changed.store(true, Ordering::SeqCst);
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_anywhere_below_is_seen_and_reading_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f.txt"), "x").unwrap();
        let watch = Watch::start(dir.path()).unwrap();
        let _ = std::fs::read_to_string(deep.join("f.txt")).unwrap();
        let _ = std::fs::read_dir(&deep).unwrap().count();
        assert!(!watch.changed(), "reading is not a change");
        std::fs::write(deep.join("f.txt"), "y").unwrap();
        assert!(watch.changed());
        assert!(watch.changed(), "it stays changed");

        let watch = Watch::start(dir.path()).unwrap();
        std::fs::write(dir.path().join("a/new.txt"), "n").unwrap();
        assert!(watch.changed(), "a new file");
        let watch = Watch::start(dir.path()).unwrap();
        std::fs::remove_file(deep.join("f.txt")).unwrap();
        assert!(watch.changed(), "a deleted file");
    }
}
