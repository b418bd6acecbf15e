//! The lock of a conversation carried on in place: one `flock`ed file per agent conversation
//! under the agents' home (`~/.local/state/nucleic/in-place/`), held by the host driving it
//! and naming it (pid, start time, Nucleic home, session), so a second host or adoption of the
//! same conversation is refused with its holder; the kernel drops it when the holder dies, and
//! whoever takes it next records what the dead holder had written.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nix::fcntl::Flock;
use nucleic_protocol::Backend;
use serde::{Deserialize, Serialize};

use crate::error::HostError;

/// Where the locks live under the agents' home: hidden from every agent's sandbox (the home is
/// an empty tmpfs there), seen by every host whose agents share that home — the hosts that
/// can find the conversation at all.
pub const LOCK_DIR: &str = ".local/state/nucleic/in-place";

/// Who holds a conversation, as the holder wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    pub pid: u32,
    /// The pid's start time (`/proc/PID/stat`), so a reused pid is not mistaken for it.
    pub start_ticks: u64,
    /// The holder's `NUCLEIC_HOME`: which host it is.
    pub host: String,
    /// The Nucleic session carrying it on.
    pub session: String,
    pub backend: Backend,
    pub conversation: String,
    /// The checkout it works in.
    pub checkout: String,
    /// RFC 3339.
    pub since: String,
}

impl Holder {
    fn describe(&self) -> String {
        format!(
            "Nucleic session {} of the host at {} (pid {}, since {}), in {}",
            self.session, self.host, self.pid, self.since, self.checkout
        )
    }
}

/// A held lock; dropping it releases it (the file is emptied first: it names nobody).
#[derive(Debug)]
pub struct ConversationLock {
    file: Flock<File>,
    pub path: PathBuf,
}

impl Drop for ConversationLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

/// A lock just taken, and the record a holder that died with it left, if any.
#[derive(Debug)]
pub struct Taken {
    pub lock: ConversationLock,
    pub stale: Option<Holder>,
}

/// The lock file of `conversation` of `backend` under the agents' home `home`.
pub fn lock_path(home: &Path, backend: Backend, conversation: &str) -> PathBuf {
    let safe: String = conversation
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    home.join(LOCK_DIR).join(format!("{}-{safe}.lock", backend.as_str()))
}

/// Takes the lock at `path` for `me`, or refuses naming who holds it. The file is opened (made
/// 0600 in a 0700 folder) without truncating and `flock`ed at once: of two takers, the kernel
/// lets one through; the other reads the holder's record.
pub fn take(path: &Path, me: &Holder) -> Result<Taken, HostError> {
    let io = |e: std::io::Error| {
        HostError::Invalid(format!("cannot take the in-place lock {}: {e}", path.display()))
    };
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
    }
    let Some(mut file) = nucleic_core::try_lock_file(path).map_err(io)? else {
        let holder = match read_holder(path) {
            Some(h) => h.describe(),
            None => "a host that is taking it now".to_owned(),
        };
        return Err(HostError::Invalid(format!(
            "the {} conversation {} is already carried on in place by {holder} (lock {}); \
             hand it over there first",
            me.backend.as_str(),
            me.conversation,
            path.display()
        )));
    };
    let mut before = String::new();
    file.read_to_string(&mut before).map_err(io)?;
    let stale = serde_json::from_str::<Holder>(&before).ok();
    let body = serde_json::to_string(me).map_err(|e| HostError::Invalid(e.to_string()))?;
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    file.write_all(body.as_bytes()).map_err(io)?;
    file.sync_data().map_err(io)?;
    Ok(Taken { lock: ConversationLock { file, path: path.to_owned() }, stale })
}

/// The record in the lock file at `path`, when it names a live process.
pub fn read_holder(path: &Path) -> Option<Holder> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    let holder: Holder = serde_json::from_str(&text).ok()?;
    nucleic_agents::process::is_running(holder.pid, holder.start_ticks).then_some(holder)
}

/// This process's start time, for its records.
pub fn my_start_ticks() -> u64 {
    nucleic_agents::process::proc_stat(std::process::id()).map_or(0, |s| s.start_ticks)
}

/// The locks this host holds, by Nucleic session.
#[derive(Debug, Default)]
pub struct InPlaceLocks {
    held: Mutex<HashMap<String, ConversationLock>>,
}

impl InPlaceLocks {
    pub fn holds(&self, session: &str) -> bool {
        self.held.lock().is_ok_and(|h| h.contains_key(session))
    }

    pub fn keep(&self, session: &str, lock: ConversationLock) {
        if let Ok(mut held) = self.held.lock() {
            held.insert(session.to_owned(), lock);
        }
    }

    /// Releases session `session`'s lock; whether it held one.
    pub fn release(&self, session: &str) -> bool {
        self.held.lock().ok().and_then(|mut h| h.remove(session)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me(session: &str) -> Holder {
        Holder {
            pid: std::process::id(),
            start_ticks: my_start_ticks(),
            host: "/home/a/.nucleic".into(),
            session: session.into(),
            backend: Backend::ClaudeCode,
            conversation: "c0ffee".into(),
            checkout: "/src/app".into(),
            since: "2026-12-07T21:00:00Z".into(),
        }
    }

    #[test]
    fn a_second_taker_is_refused_naming_the_first_until_it_lets_go() {
        let home = tempfile::tempdir().unwrap();
        let path = lock_path(home.path(), Backend::ClaudeCode, "c0ffee/../x");
        assert!(path.starts_with(home.path().join(LOCK_DIR)), "{}", path.display());
        let first = take(&path, &me("s-one")).unwrap();
        assert!(first.stale.is_none());
        let mode = std::fs::metadata(&path).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777, 0o600);
        let refused = take(&path, &me("s-two")).unwrap_err().to_string();
        assert!(refused.contains("Nucleic session s-one"), "{refused}");
        assert!(refused.contains(&format!("pid {}", std::process::id())), "{refused}");
        drop(first.lock);
        assert_eq!(read_holder(&path), None, "a released lock names nobody");
        let second = take(&path, &me("s-two")).unwrap();
        assert!(second.stale.is_none(), "a released lock leaves no stale record");
        assert_eq!(read_holder(&path).map(|h| h.session), Some("s-two".into()));
    }

    #[test]
    fn a_lock_left_by_a_dead_holder_is_taken_over_with_its_record() {
        let home = tempfile::tempdir().unwrap();
        let path = lock_path(home.path(), Backend::Codex, "t-1");
        // A host that died holding it: its record stays, its flock went with it.
        let mut dead = me("s-dead");
        dead.start_ticks = 1;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string(&dead).unwrap()).unwrap();
        assert_eq!(read_holder(&path), None, "a record of a dead pid names nobody live");
        let taken = take(&path, &me("s-new")).unwrap();
        assert_eq!(taken.stale, Some(dead));
    }
}
