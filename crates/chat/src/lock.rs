//! Exactly one poller per bot token: an exclusive file lock under `$NUCLEIC_HOME/chat/`, named
//! by a hash of the token (the token itself is never written), held for the bridge's life.

use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;

/// Why the poller's lock was not taken.
#[derive(Debug, Error)]
pub enum LockError {
    #[error(
        "another bridge (pid {pid}: a `nucleic chat`, or a daemon after `nucleic chat enable`) already polls this bot token (lock {}); Telegram lets one process poll a bot: stop that one first (`nucleic chat disable` for the daemon's)",
        path.display()
    )]
    Held { pid: String, path: PathBuf },
    #[error("poller lock {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

/// A short, stable name for a bot token: the first 16 hex digits of its SHA-256.
pub fn token_key(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The lock file of `token` under `home`.
pub fn lock_path(home: &Path, token: &str) -> PathBuf {
    home.join("chat").join(format!("poller-{}.lock", token_key(token)))
}

/// The poller's lock, released when dropped (or when the process dies).
#[derive(Debug)]
pub struct PollerLock {
    _file: File,
    path: PathBuf,
}

impl PollerLock {
    /// Takes the lock of `token` under `home`, or says who holds it.
    pub fn acquire(home: &Path, token: &str) -> Result<PollerLock, LockError> {
        let path = lock_path(home, token);
        let io = |source| LockError::Io { path: path.clone(), source };
        if let Some(dir) = path.parent() {
            DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim().to_owned();
                let pid = if pid.is_empty() { "unknown".to_owned() } else { pid };
                return Err(LockError::Held { pid, path });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(std::process::id().to_string().as_bytes()).map_err(io)?;
        Ok(PollerLock { _file: file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_poller_on_the_same_token_is_refused_and_told_why() {
        let home = tempfile::tempdir().unwrap();
        let first = PollerLock::acquire(home.path(), "123:abc").unwrap();
        let e = PollerLock::acquire(home.path(), "123:abc").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("already polls this bot token"), "{text}");
        assert!(text.contains(&std::process::id().to_string()), "{text}");
        // Another bot is another lock; the token is not in the file name.
        let other = PollerLock::acquire(home.path(), "456:def").unwrap();
        assert!(!other.path().to_string_lossy().contains("456"));
        drop(first);
        PollerLock::acquire(home.path(), "123:abc").unwrap();
    }
}
