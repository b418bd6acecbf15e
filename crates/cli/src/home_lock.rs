//! One host per `NUCLEIC_HOME`: `serve` and `demo` hold an exclusive `flock` on `host.lock`
//! (0600) for the daemon's whole life, and write their pid and start time into it so others can
//! name the live holder. The kernel drops the lock when the process ends, however it ends.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::Flock;

/// The lock file in `NUCLEIC_HOME`.
pub const LOCK_FILE: &str = "host.lock";

/// How long a host starting waits for a lock held by nobody named (see [`HomeLock::acquire`]).
pub const UNNAMED_HOLDER_WAIT: Duration = Duration::from_secs(5);

/// The held lock; dropping it (or exiting) releases it.
#[derive(Debug)]
pub struct HomeLock {
    file: Flock<File>,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another nucleic host{} is running on {home}; stop it first (or use another NUCLEIC_HOME)",
        holder.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Held { home: PathBuf, holder: Option<u32> },
    #[error("cannot lock {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

impl HomeLock {
    /// Takes the lock of `home`, or refuses at once when a live host that named itself holds it.
    /// A lock held by nobody named — a host that crashed and is still being torn down (the
    /// kernel releases its files only when its last thread has exited, which a thread inside a
    /// long disk write delays), or one starting that has not written its pid yet — is waited
    /// for up to `wait`, then refused.
    pub fn acquire(home: &Path, wait: Duration) -> Result<HomeLock, LockError> {
        let path = home.join(LOCK_FILE);
        let io = |source: std::io::Error| LockError::Io { path: path.clone(), source };
        let deadline = Instant::now() + wait;
        let mut file = loop {
            if let Some(file) = nucleic_core::try_lock_file(&path).map_err(io)? {
                break file;
            }
            let holder = holder(home);
            if holder.is_some() || Instant::now() >= deadline {
                return Err(LockError::Held { home: home.to_owned(), holder });
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let me = std::process::id();
        let ticks = nucleic_agents::process::proc_stat(me).map_or(0, |s| s.start_ticks);
        let body = serde_json::json!({ "pid": me, "startTicks": ticks }).to_string();
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(body.as_bytes()).map_err(io)?;
        Ok(HomeLock { file })
    }
}

impl Drop for HomeLock {
    fn drop(&mut self) {
        // Still held here: no other host can have written it. Empty, it names nobody while this
        // process finishes exiting.
        let _ = self.file.set_len(0);
    }
}

/// The pid of the live host holding `home`'s lock, as it wrote it (checked against its start
/// time, so a reused pid is not mistaken for it). `None` when no live process matches — the lock
/// may still be held by a host that is starting and has not written its pid yet.
pub fn holder(home: &Path) -> Option<u32> {
    let mut text = String::new();
    File::open(home.join(LOCK_FILE)).ok()?.read_to_string(&mut text).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let pid = u32::try_from(v.get("pid")?.as_u64()?).ok()?;
    let ticks = v.get("startTicks")?.as_u64()?;
    nucleic_agents::process::is_running(pid, ticks).then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let home = tempfile::tempdir().unwrap();
        let first = HomeLock::acquire(home.path(), Duration::ZERO).unwrap();
        let mode = std::fs::metadata(home.path().join(LOCK_FILE)).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777, 0o600);
        assert_eq!(holder(home.path()), Some(std::process::id()));
        // flock locks belong to the open file: a second open in the same process conflicts too.
        match HomeLock::acquire(home.path(), Duration::ZERO) {
            Err(e @ LockError::Held { holder: Some(pid), .. }) => {
                assert_eq!(pid, std::process::id());
                assert!(e.to_string().contains(&format!("pid {pid}")), "{e}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        drop(first);
        assert_eq!(holder(home.path()), None);
        let _again = HomeLock::acquire(home.path(), Duration::ZERO).unwrap();
    }

    #[test]
    fn a_lock_held_by_nobody_named_is_waited_for_within_the_deadline() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(LOCK_FILE);
        // Held, with nobody named in it: like a crashed host whose last thread is still exiting.
        let unnamed = nucleic_core::try_lock_file(&path).unwrap().unwrap();
        let started = Instant::now();
        match HomeLock::acquire(home.path(), Duration::from_millis(300)) {
            Err(LockError::Held { holder: None, .. }) => {}
            other => panic!("expected a refusal naming nobody, got {other:?}"),
        }
        assert!(started.elapsed() >= Duration::from_millis(300), "gave up before its deadline");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            drop(unnamed);
        });
        let lock = HomeLock::acquire(home.path(), Duration::from_secs(5)).unwrap();
        assert_eq!(holder(home.path()), Some(std::process::id()));
        release.join().unwrap();
        drop(lock);
    }

    #[test]
    fn a_stale_pid_names_nobody() {
        let home = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let body = serde_json::json!({ "pid": me, "startTicks": 1 }).to_string();
        std::fs::write(home.path().join(LOCK_FILE), body).unwrap();
        assert_eq!(holder(home.path()), None, "same pid, another start time");
    }
}
