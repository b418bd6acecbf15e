//! At most one writer per transcript: a registry of the transcripts this process writes, plus an
//! exclusive `flock` on `<transcript>.lock` (0600) so a writer in another process (a second host
//! on the same home) is refused too. The kernel drops the `flock` however the process ends.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::error::CoreError;

/// Transcripts with a writer in this process.
fn registry() -> MutexGuard<'static, HashSet<PathBuf>> {
    static WRITERS: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    WRITERS.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many transcripts have a writer in this process (a leak check: a session whose writer
/// was closed must not stay registered).
pub fn open_writers() -> usize {
    registry().len()
}

/// The right to write one transcript; dropping it gives the right up.
#[derive(Debug)]
pub(crate) struct WriterLock {
    /// The registry key: the transcript's path with its directory made canonical.
    key: PathBuf,
    _file: Flock<File>,
}

/// Opens (creating it 0600) the lock file `path` and takes an exclusive `flock` on it without
/// waiting: `None` when another open file (another process) holds it.
pub fn try_lock_file(path: &Path) -> std::io::Result<Option<Flock<File>>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(Some(locked)),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(errno.into()),
    }
}

impl WriterLock {
    /// Takes the transcript at `path` (its directory created 0700 if needed), or refuses when
    /// another writer has it.
    pub(crate) fn acquire(path: &Path) -> Result<WriterLock, CoreError> {
        let io = |source: std::io::Error| CoreError::Lock { path: path.to_owned(), source };
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a file path",
            )));
        };
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
        let key = dir.canonicalize().map_err(io)?.join(name);
        if !registry().insert(key.clone()) {
            return Err(CoreError::WriterBusy { path: path.to_owned(), holder: "this process" });
        }
        // From here on, dropping `registered` gives the registry entry back.
        let registered = Registered(key);
        let mut lock_name = name.to_os_string();
        lock_name.push(".lock");
        let Some(file) = try_lock_file(&dir.join(lock_name)).map_err(io)? else {
            return Err(CoreError::WriterBusy {
                path: path.to_owned(),
                holder: "another process (a second host on this home?)",
            });
        };
        let key = registered.take();
        Ok(WriterLock { key, _file: file })
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        registry().remove(&self.key);
    }
}

/// A registry entry that is given back unless taken.
struct Registered(PathBuf);

impl Registered {
    fn take(mut self) -> PathBuf {
        std::mem::take(&mut self.0)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            registry().remove(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_second_writer_in_this_process_is_refused_until_the_first_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s").join("transcript.jsonl");
        let first = WriterLock::acquire(&path).unwrap();
        let refused = WriterLock::acquire(&path).unwrap_err();
        assert!(refused.to_string().contains("in this process"), "{refused}");
        // The same file under another spelling is the same transcript.
        let other = dir.path().join("s").join(".").join("transcript.jsonl");
        assert!(WriterLock::acquire(&other).is_err());
        drop(first);
        WriterLock::acquire(&path).unwrap();
        let mode = std::fs::metadata(dir.path().join("s/transcript.jsonl.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_writer_holding_the_flock_elsewhere_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        // Another open file description holding the flock: what a second host process has.
        let other = File::create(dir.path().join("transcript.jsonl.lock")).unwrap();
        let held = Flock::lock(other, FlockArg::LockExclusiveNonblock).unwrap();
        let refused = WriterLock::acquire(&path).unwrap_err();
        assert!(refused.to_string().contains("another process"), "{refused}");
        // The refusal left no registry entry behind.
        drop(held);
        WriterLock::acquire(&path).unwrap();
    }

    /// A second process (here `flock(1)`, as a second host would) holding the transcript keeps
    /// this one from writing it.
    #[test]
    fn a_writer_in_another_process_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let lock = dir.path().join("transcript.jsonl.lock");
        let mut other = std::process::Command::new("flock")
            // `-w`, not `-n`: this test's own probes below hold the lock for moments, and a
            // non-blocking flock that hit one gave up at once (the test then timed out).
            .args(["-w", "5", lock.to_str().unwrap(), "cat"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("flock(1) from util-linux");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let refused = loop {
            match WriterLock::acquire(&path) {
                Err(e) => break e,
                Ok(taken) => drop(taken),
            }
            assert!(std::time::Instant::now() < deadline, "flock(1) did not take the lock in 5 s");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(refused.to_string().contains("another process"), "{refused}");
        // End of input ends `cat`, then `flock`: the lock goes with them.
        drop(other.stdin.take());
        assert!(other.wait().unwrap().success());
        WriterLock::acquire(&path).unwrap();
    }
}
