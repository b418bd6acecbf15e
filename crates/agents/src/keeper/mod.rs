//! Keepers: a small process per agent (`nucleic __keeper <dir>`) that owns the agent's stdio so
//! the agent outlives the host. It spools everything the agent writes to a file before anything
//! else sees it, passes the host's input on, and lets a restarted host re-attach and read the
//! spool again from the start — the host then skips what its transcript already holds (see
//! [`crate::supervisor::Origins`]), so the transcript continues with no gap and no duplicate.
//!
//! A keeper's directory (0700, inside the host's data dir, which agents never see) holds
//! `spec.json` (what to run), `spool` (the agent's output, [`spool`] format), `socket` (where a
//! host attaches: one connection reads the spool, another writes the agent's input) and
//! `keeper.log`. The keeper ends when the host releases it after recording the run's end
//! (removing the directory), when its directory disappears (stopping the agent), or when no host
//! attached for a long time: an agent nobody attached to for `orphan_after` is stopped, and a
//! keeper whose agent exited waits `linger` for a host, then exits leaving the spool for the
//! next host to import.

mod attach;
mod serve;
pub mod spool;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::process::SpawnSpec;

pub use attach::{KeeperAttachment, Reach, attach, read_spool, release, start_keeper};
pub use serve::run_keeper;

/// The version of the keeper protocol and directory layout; a keeper of another version is
/// not adopted.
pub const KEEPER_VERSION: u32 = 1;

/// What a keeper runs, written by the host as `spec.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeeperSpec {
    pub version: u32,
    /// The run's id: unique per agent process, the prefix of its events' origins.
    pub run: String,
    pub spawn: SpawnSpec,
    /// Stop an agent no host has been attached to for this long.
    pub orphan_after: Duration,
    /// After the agent exited, wait this long for a host before exiting (the spool stays).
    pub linger: Duration,
}

impl KeeperSpec {
    /// A spec for `spawn` with a fresh run id and the default timeouts.
    pub fn new(spawn: SpawnSpec) -> KeeperSpec {
        KeeperSpec {
            version: KEEPER_VERSION,
            run: format!("k{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
            spawn,
            orphan_after: DEFAULT_ORPHAN_AFTER,
            linger: DEFAULT_LINGER,
        }
    }
}

/// How long an agent runs with no host attached before its keeper stops it.
pub const DEFAULT_ORPHAN_AFTER: Duration = Duration::from_secs(30 * 60);
/// How long a keeper whose agent exited waits for a host.
pub const DEFAULT_LINGER: Duration = Duration::from_secs(10 * 60);

/// What a keeper says first on a connection that reads its spool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeeperHello {
    pub version: u32,
    pub run: String,
    /// The agent's pid (bubblewrap's under isolation; it leads the agent's process tree).
    pub pid: u32,
    /// The agent's start time (`/proc/<pid>/stat` field 22): with the pid, names this process
    /// and no later one that reuses its pid.
    pub start_ticks: u64,
    /// The keeper's own pid.
    pub keeper_pid: u32,
}

/// The exit record's payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptExit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// The files of a keeper's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeeperDir(pub PathBuf);

impl KeeperDir {
    pub fn spec(&self) -> PathBuf {
        self.0.join("spec.json")
    }
    pub fn spool(&self) -> PathBuf {
        self.0.join("spool")
    }
    pub fn socket(&self) -> PathBuf {
        self.0.join("socket")
    }
    pub fn log(&self) -> PathBuf {
        self.0.join("keeper.log")
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    /// Reads `spec.json`.
    pub fn read_spec(&self) -> Result<KeeperSpec, KeeperError> {
        let path = self.spec();
        let text = std::fs::read_to_string(&path).map_err(|e| KeeperError::io(&path, e))?;
        serde_json::from_str(&text)
            .map_err(|e| KeeperError::Invalid(format!("{}: {e}", path.display())))
    }
}

/// What went wrong starting, serving or attaching to a keeper.
#[derive(Debug, thiserror::Error)]
pub enum KeeperError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("keeper: {0}")]
    Invalid(String),
    #[error("keeper: {what} did not happen within {after:?}")]
    Timeout { what: String, after: Duration },
    #[error(transparent)]
    Agent(#[from] crate::error::AgentError),
}

impl KeeperError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> KeeperError {
        KeeperError::Io { path: path.to_owned(), source }
    }
}
