//! The relay connection's state, kept in memory and in `$NUCLEIC_HOME/relay-status.json` (0600)
//! so `nucleic doctor` can show it without talking to the daemon.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// The status file's name inside `$NUCLEIC_HOME`.
pub const RELAY_STATUS_FILE: &str = "relay-status.json";

/// Where the relay connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RelayState {
    /// Dialling, or proving the room.
    Connecting,
    /// The relay accepted the host: devices can reach it.
    Connected,
    /// The last attempt failed (or the connection dropped); the next one is scheduled.
    Retrying,
    /// The daemon stopped using the relay.
    Stopped,
}

/// What `nucleic doctor` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayStatus {
    pub relay: String,
    #[serde(rename = "hostID")]
    pub host_id: String,
    pub state: RelayState,
    /// Unix milliseconds when the state began.
    pub since: i64,
    /// Why the last connection failed or ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When retrying: milliseconds until the next attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_in_ms: Option<u64>,
    /// Attempts since the last success.
    pub attempts: u32,
    /// Device channels open now.
    pub devices: usize,
    /// The daemon's pid (a status file of a dead daemon is stale).
    pub pid: u32,
}

fn unix_millis() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)).unwrap_or(0)
}

/// The status, and its file.
#[derive(Debug)]
pub struct StatusBoard {
    path: PathBuf,
    now: Mutex<RelayStatus>,
}

impl StatusBoard {
    pub fn new(home: &Path, relay: &str, host_id: &str) -> StatusBoard {
        StatusBoard {
            path: home.join(RELAY_STATUS_FILE),
            now: Mutex::new(RelayStatus {
                relay: relay.to_owned(),
                host_id: host_id.to_owned(),
                state: RelayState::Connecting,
                since: unix_millis(),
                last_error: None,
                retry_in_ms: None,
                attempts: 0,
                devices: 0,
                pid: std::process::id(),
            }),
        }
    }

    pub fn now(&self) -> RelayStatus {
        self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Changes the status and, when that changed anything, rewrites the file (best effort: the
    /// daemon works without it). An unchanged status writes nothing: the relay loop notes the
    /// device count after every frame, and each write is an fsync (8–20 ms on this machine's
    /// disk) that held up every device's frames on that connection.
    pub fn update(&self, change: impl FnOnce(&mut RelayStatus)) {
        let text = {
            let mut now = self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let before = now.clone();
            change(&mut now);
            if *now == before {
                return;
            }
            if now.state != before.state {
                now.since = unix_millis();
            }
            serde_json::to_string_pretty(&*now).unwrap_or_default()
        };
        let _ = nucleic_host::write_private_file(&self.path, text.as_bytes());
    }
}

/// Reads a daemon's relay status from `home`, if it wrote one.
pub fn read(home: &Path) -> Option<RelayStatus> {
    serde_json::from_str(&std::fs::read_to_string(home.join(RELAY_STATUS_FILE)).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_change_rewrites_the_status_file() {
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join(RELAY_STATUS_FILE);
        let board = StatusBoard::new(home.path(), "ws://127.0.0.1:1", "h");
        board.update(|s| s.devices = 1);
        assert_eq!(read(home.path()).unwrap().devices, 1);
        std::fs::remove_file(&file).unwrap();
        // The relay loop notes the same count after every frame: no write, no fsync.
        board.update(|s| s.devices = 1);
        assert!(!file.exists());
        board.update(|s| s.devices = 2);
        assert_eq!(read(home.path()).unwrap().devices, 2);
        board.update(|s| s.state = RelayState::Connected);
        let status = read(home.path()).unwrap();
        assert_eq!((status.state, status.devices), (RelayState::Connected, 2));
    }
}
