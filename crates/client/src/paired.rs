//! The hosts this machine paired with as a device (`nucleic remote pair LINK`): one file per
//! host, `<home>/remotes/<host id>.json`, 0600 in a 0700 folder — the relay, the host's id, key
//! and direct addresses, and this device's own key for that host (its private half never leaves
//! the file). Pairing spends the link's one-time secret; every later connection reconnects.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
pub use nucleic_channel::link::PairingLink;
use nucleic_channel::{PublicKey, StaticKeypair};
use serde::{Deserialize, Serialize};

use crate::client::{Client, ClientOptions};
use crate::error::ClientError;
use crate::remote::{Opening, RemoteHost};

/// The folder of a home that holds the paired hosts.
pub const REMOTES_DIR: &str = "remotes";

/// A host this device paired with.
#[derive(Debug, Clone)]
pub struct PairedHost {
    pub host: RemoteHost,
    /// The name the host recorded this device under.
    pub name: String,
    /// The host's machine name, from the pairing link.
    pub host_name: Option<String>,
    /// When it was paired (Unix milliseconds).
    pub paired_at: u64,
}

/// The stored form.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    relay: String,
    #[serde(rename = "hostID")]
    host_id: String,
    host_key: String,
    #[serde(default)]
    direct: Vec<String>,
    device_public: String,
    device_private: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relay_ca: Option<PathBuf>,
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host_name: Option<String>,
    paired_at: u64,
}

impl PairedHost {
    /// How a person names it: the machine name and the host id's first 12 digits.
    pub fn label(&self) -> String {
        let short = self.host.host_id.get(..12).unwrap_or(&self.host.host_id);
        match &self.host_name {
            Some(machine) => format!("{machine} ({short})"),
            None => short.to_owned(),
        }
    }

    fn stored(&self) -> Stored {
        let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
        Stored {
            relay: self.host.relay.clone(),
            host_id: self.host.host_id.clone(),
            host_key: b64(self.host.host_key.as_bytes()),
            direct: self.host.direct.clone(),
            device_public: b64(self.host.device.public().as_bytes()),
            device_private: b64(self.host.device.private_for_storage()),
            relay_ca: self.host.relay_ca.clone(),
            name: self.name.clone(),
            host_name: self.host_name.clone(),
            paired_at: self.paired_at,
        }
    }

    fn from_stored(s: Stored, path: &Path) -> Result<PairedHost, ClientError> {
        let bad = |why: String| ClientError::Io {
            path: path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, why),
        };
        let bytes = |field: &str, text: &str| {
            URL_SAFE_NO_PAD.decode(text).map_err(|e| bad(format!("{field}: {e}")))
        };
        let host_key = PublicKey::from_slice(&bytes("hostKey", &s.host_key)?)
            .map_err(|e| bad(format!("hostKey: {e}")))?;
        let device = StaticKeypair::from_keys(
            &bytes("devicePrivate", &s.device_private)?,
            &bytes("devicePublic", &s.device_public)?,
        )
        .map_err(|e| bad(format!("device key: {e}")))?;
        Ok(PairedHost {
            host: RemoteHost {
                relay: s.relay,
                host_id: s.host_id,
                host_key,
                direct: s.direct,
                device,
                relay_ca: s.relay_ca,
            },
            name: s.name,
            host_name: s.host_name,
            paired_at: s.paired_at,
        })
    }
}

/// Pairs with the host of `link` as a new device (a fresh key), and on the host's welcome
/// stores it under `home`. The connection stays open for the caller.
pub async fn pair(
    home: &Path,
    link: &PairingLink,
    relay_ca: Option<PathBuf>,
    options: ClientOptions,
) -> Result<(PairedHost, Client), ClientError> {
    let device = StaticKeypair::generate()
        .map_err(|e| ClientError::Daemon(format!("cannot make a device key: {e}")))?;
    let host = RemoteHost {
        relay: link.relay.clone(),
        host_id: link.host_id.clone(),
        host_key: link.host_key,
        direct: link.lan.clone(),
        device,
        relay_ca,
    };
    let client = Client::remote(host.clone(), Opening::Pair(link.secret.clone()), options).await?;
    let paired_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let paired =
        PairedHost { host, name: link.name.clone(), host_name: link.host_name.clone(), paired_at };
    save(home, &paired)?;
    Ok((paired, client))
}

/// Connects to a paired host.
pub async fn connect(paired: &PairedHost, options: ClientOptions) -> Result<Client, ClientError> {
    Client::remote(paired.host.clone(), Opening::Connect, options).await
}

fn dir(home: &Path) -> PathBuf {
    home.join(REMOTES_DIR)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ClientError + '_ {
    move |source| ClientError::Io { path: path.to_owned(), source }
}

/// Writes `paired` (0600, replaced atomically) into `<home>/remotes/` (0700).
pub fn save(home: &Path, paired: &PairedHost) -> Result<PathBuf, ClientError> {
    let dir = dir(home);
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(io(&dir))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(io(&dir))?;
    let path = dir.join(format!("{}.json", paired.host.host_id));
    let tmp = dir.join(format!(".{}.json.tmp", paired.host.host_id));
    let text = serde_json::to_vec_pretty(&paired.stored()).map_err(|e| ClientError::Send {
        what: "the paired host".into(),
        message: e.to_string(),
    })?;
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io(&tmp))?;
    file.write_all(&text).and_then(|()| file.sync_all()).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(path)
}

/// Every host paired under `home`, oldest first (none when the folder does not exist).
pub fn list(home: &Path) -> Result<Vec<PairedHost>, ClientError> {
    let dir = dir(home);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(&dir)(e)),
    };
    let mut hosts = Vec::new();
    for entry in entries {
        let path = entry.map_err(io(&dir))?.path();
        let named = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| !n.starts_with('.'));
        if !named || path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read(&path).map_err(io(&path))?;
        let stored: Stored = serde_json::from_slice(&text).map_err(|e| ClientError::Io {
            path: path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
        hosts.push(PairedHost::from_stored(stored, &path)?);
    }
    hosts.sort_by_key(|h| h.paired_at);
    Ok(hosts)
}

/// The paired host `wanted` names: a host id or its prefix, or the machine name. Ambiguous or
/// unknown names are errors that list what there is.
pub fn find(home: &Path, wanted: &str) -> Result<PairedHost, ClientError> {
    let hosts = list(home)?;
    let wanted = wanted.trim();
    let by_id: Vec<&PairedHost> = hosts
        .iter()
        .filter(|h| !wanted.is_empty() && h.host.host_id.starts_with(&wanted.to_ascii_lowercase()))
        .collect();
    let by_name: Vec<&PairedHost> =
        hosts.iter().filter(|h| h.host_name.as_deref() == Some(wanted)).collect();
    let known = || {
        let names: Vec<String> = hosts.iter().map(PairedHost::label).collect();
        if names.is_empty() {
            "no host is paired: `nucleic remote pair LINK` first".to_owned()
        } else {
            format!("paired: {}", names.join(", "))
        }
    };
    match (by_id.as_slice(), by_name.as_slice()) {
        ([one], _) | ([], [one]) => Ok((*one).clone()),
        ([], []) => Err(ClientError::Daemon(format!("no paired host {wanted:?}; {}", known()))),
        _ => Err(ClientError::Daemon(format!(
            "{wanted:?} names more than one paired host; use more of its id ({})",
            known()
        ))),
    }
}

/// Forgets a paired host (its file); the host still lists this device until it is revoked there.
pub fn forget(home: &Path, paired: &PairedHost) -> Result<(), ClientError> {
    let path = dir(home).join(format!("{}.json", paired.host.host_id));
    std::fs::remove_file(&path).map_err(io(&path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paired(id: char, machine: &str, at: u64) -> PairedHost {
        PairedHost {
            host: RemoteHost {
                relay: "wss://relay.example".into(),
                host_id: id.to_string().repeat(64),
                host_key: PublicKey([7; 32]),
                direct: vec!["ws://10.0.0.2:7879".into()],
                device: StaticKeypair::generate().unwrap(),
                relay_ca: None,
            },
            name: "laptop".into(),
            host_name: Some(machine.into()),
            paired_at: at,
        }
    }

    #[test]
    fn paired_hosts_are_kept_private_read_back_and_found_by_id_or_name() {
        let home = tempfile::tempdir().unwrap();
        assert!(list(home.path()).unwrap().is_empty());
        let a = paired('a', "studio", 2);
        let path = save(home.path(), &a).unwrap();
        save(home.path(), &paired('b', "studio", 1)).unwrap();
        save(home.path(), &paired('c', "attic", 3)).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&home.path().join(REMOTES_DIR)), 0o700);
        let all = list(home.path()).unwrap();
        assert_eq!(all.iter().map(|h| h.paired_at).collect::<Vec<_>>(), vec![1, 2, 3]);
        let back = find(home.path(), "aaaa").unwrap();
        assert_eq!(back.host.device.private_for_storage(), a.host.device.private_for_storage());
        assert_eq!(back.host.host_key, a.host.host_key);
        assert_eq!(back.host.direct, a.host.direct);
        assert_eq!(find(home.path(), "attic").unwrap().host.host_id, "c".repeat(64));
        let err = find(home.path(), "studio").unwrap_err().to_string();
        assert!(err.contains("more than one"), "{err}");
        let err = find(home.path(), "nowhere").unwrap_err().to_string();
        assert!(err.contains("attic (cccccccccccc)"), "{err}");
        forget(home.path(), &back).unwrap();
        assert_eq!(list(home.path()).unwrap().len(), 2);
        std::fs::write(home.path().join(REMOTES_DIR).join("x.json"), "{").unwrap();
        let err = list(home.path()).unwrap_err().to_string();
        assert!(err.contains("x.json"), "{err}");
    }
}
