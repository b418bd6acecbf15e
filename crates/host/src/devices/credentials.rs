//! Who may act on the host: its token (file 0600 in `$NUCLEIC_HOME`, for the CLI and scripts on
//! this machine) and its devices (browsers and, later, phones, each proving a key pair of its
//! own). Revoking a device or rotating the token is announced so open connections close at once.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, RwLock};

use tokio::sync::broadcast;

use crate::error::HostError;

/// The token file's name inside `$NUCLEIC_HOME`.
pub const TOKEN_FILE: &str = nucleic_protocol::TOKEN_FILE;

/// Length of a device key paired over the Noise channel (X25519).
pub(crate) const CHANNEL_KEY_LEN: usize = 32;

/// A device paired over the Noise channel (`nucleic pair`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelDevice {
    pub id: String,
    pub name: String,
    /// Its X25519 static key.
    pub key: Vec<u8>,
}

/// Something that ends connections: one device revoked, or every credential (a rotated token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revocation {
    Device(String),
    /// An MCP grant, by name.
    Mcp(String),
    /// A chat user the person unpaired (`telegram:42`): connections acting for them.
    Person(String),
    All,
}

/// The token in force and the revocation announcements.
#[derive(Debug)]
pub(crate) struct Credentials {
    pub(crate) token: RwLock<Arc<str>>,
    pub(crate) revocations: broadcast::Sender<Revocation>,
}

impl Credentials {
    pub(crate) fn load(home: &Path) -> Result<Credentials, HostError> {
        let token = load_or_create_token(home).map_err(|e| {
            HostError::Invalid(format!(
                "cannot read or create {}: {e}",
                home.join(TOKEN_FILE).display()
            ))
        })?;
        let (revocations, _) = broadcast::channel(64);
        Ok(Credentials { token: RwLock::new(token.into()), revocations })
    }
}

/// Reads the token, creating a random one (0600) on first use.
pub fn load_or_create_token(home: &Path) -> std::io::Result<String> {
    let path = home.join(TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            return Ok(t.trim().to_owned());
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let token = new_token();
    write_token(home, &token)?;
    Ok(token)
}

pub(crate) fn new_token() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// Replaces the token file atomically (0600 from the start).
pub(crate) fn write_token(home: &Path, token: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(home)?;
    crate::lifecycle::private::write_private_file(&home.join(TOKEN_FILE), token.as_bytes())
}

/// Constant-time comparison (length aside).
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_is_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create_token(dir.path()).unwrap();
        let b = load_or_create_token(dir.path()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        let mode =
            std::fs::metadata(dir.path().join(TOKEN_FILE)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
