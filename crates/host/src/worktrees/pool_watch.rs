//! Noticing any change to a pooled worktree without a `git status`: an inotify watch on each of
//! its directories, read (without waiting) when a session takes it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

/// Watches below one pooled worktree; dropping it removes them all (the descriptor closes).
#[derive(Debug)]
pub(crate) struct Watch {
    inotify: Inotify,
    /// Which directory each watch is on (to tell the host's own changes from others').
    dirs: Mutex<HashMap<WatchDescriptor, PathBuf>>,
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
        let watch = Watch { inotify, dirs: Mutex::default(), changed: AtomicBool::new(false) };
        watch.add_tree(root).then_some(watch)
    }

    /// Watches `root` and every directory below it.
    fn add_tree(&self, root: &Path) -> bool {
        let mut dirs = self.dirs.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stack: Vec<PathBuf> = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(wd) = self.inotify.add_watch(&dir, interesting()) else { return false };
            let Ok(entries) = std::fs::read_dir(&dir) else { return false };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(entry.path());
                }
            }
            dirs.insert(wd, dir);
        }
        true
    }

    /// Takes the events the host's own checkout caused — only at `expected` paths (the files
    /// a base move changed) and the directories leading to them — and watches directories it
    /// created. `false` (and changed for good) when any other path saw a change.
    pub(crate) fn absorb(&self, expected: &[PathBuf]) -> bool {
        if self.changed.load(Ordering::SeqCst) {
            return false;
        }
        let mut allowed: HashSet<&Path> = HashSet::new();
        for path in expected {
            allowed.extend(path.ancestors());
        }
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) if !events.is_empty() => events,
                Ok(_) | Err(nix::errno::Errno::EAGAIN) => return true,
                Err(_) => {
                    self.changed.store(true, Ordering::SeqCst);
                    return false;
                }
            };
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_IGNORED) {
                    continue;
                }
                let dir = self
                    .dirs
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&event.wd)
                    .cloned();
                let path = match (dir, event.name) {
                    (Some(dir), Some(name)) => dir.join(name),
                    (Some(dir), None) => dir,
                    (None, _) => PathBuf::new(),
                };
                if !allowed.contains(path.as_path()) {
                    self.changed.store(true, Ordering::SeqCst);
                    return false;
                }
                let new_dir = AddWatchFlags::IN_CREATE | AddWatchFlags::IN_ISDIR;
                if event.mask.contains(new_dir) && !self.add_tree(&path) {
                    self.changed.store(true, Ordering::SeqCst);
                    return false;
                }
            }
        }
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

    #[test]
    fn the_hosts_own_changes_are_absorbed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "x").unwrap();
        let watch = Watch::start(&root).unwrap();
        // A checkout rewrites a/b/f.txt and adds n/m/g.txt (a new directory, watched from now).
        std::fs::write(root.join("a/b/f.txt"), "y").unwrap();
        std::fs::create_dir_all(root.join("n/m")).unwrap();
        std::fs::write(root.join("n/m/g.txt"), "g").unwrap();
        let expected = [root.join("a/b/f.txt"), root.join("n/m/g.txt")];
        assert!(watch.absorb(&expected));
        assert!(!watch.changed());
        std::fs::write(root.join("n/m/planted.txt"), "p").unwrap();
        assert!(watch.changed(), "a change in a directory the checkout made is seen");

        let watch = Watch::start(&root).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "z").unwrap();
        std::fs::write(root.join("a/other.txt"), "o").unwrap();
        assert!(!watch.absorb(&[root.join("a/b/f.txt")]), "a path the checkout did not touch");
        assert!(watch.changed());
    }
}
