//! The chat registry the host keeps: each bridge's last report and the people the person
//! unpaired, in `$NUCLEIC_HOME/chat-bridges.json` (0600) so an unpairing outlives a restart; who
//! counts as paired (listed, and paired after any unpairing) and the listing clients see.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nucleic_protocol::{ChatBridgeReport, ChatBridgeSummary, ChatBridges, ChatPerson};
use serde::{Deserialize, Serialize};

use crate::clock::unix_millis;
use crate::error::HostError;

/// The file the registry is kept in.
pub const CHAT_BRIDGES_FILE: &str = "chat-bridges.json";
/// A bridge reports every minute: one silent for longer is shown as silent.
const SILENT_AFTER_MS: i64 = 3 * 60 * 1000;

/// What is kept.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Registry {
    /// Each bridge's last report and when it came.
    pub(crate) bridges: BTreeMap<String, (ChatBridgeReport, i64)>,
    /// People the person unpaired, and when.
    pub(crate) unpaired: BTreeMap<String, i64>,
}

impl Registry {
    /// Whether `p` counts as paired: listed, and paired after any unpairing.
    pub(crate) fn counts(&self, p: &ChatPerson) -> bool {
        self.unpaired.get(&p.person).is_none_or(|at| p.paired_at > *at)
    }

    pub(crate) fn paired(&self, person: &str) -> bool {
        self.bridges
            .values()
            .flat_map(|(r, _)| &r.paired)
            .any(|p| p.person == person && self.counts(p))
    }
}

/// The host's chat registry.
#[derive(Debug)]
pub(crate) struct ChatPeople {
    path: PathBuf,
    registry: Mutex<Registry>,
}

impl ChatPeople {
    /// Reads the registry of `home` (empty when there is none yet).
    pub(crate) fn load(home: &Path) -> Result<ChatPeople, HostError> {
        let path = home.join(CHAT_BRIDGES_FILE);
        let registry = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                HostError::Invalid(format!("{} is not a chat registry: {e}", path.display()))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Registry::default(),
            Err(e) => {
                return Err(HostError::Invalid(format!("cannot read {}: {e}", path.display())));
            }
        };
        Ok(ChatPeople { path, registry: Mutex::new(registry) })
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes the registry (0600, replaced atomically).
    pub(crate) fn save(&self, registry: &Registry) -> Result<(), HostError> {
        let io = |e: std::io::Error| {
            HostError::Invalid(format!("cannot write {}: {e}", self.path.display()))
        };
        let text = serde_json::to_vec(registry)
            .map_err(|e| HostError::Invalid(format!("cannot encode the chat registry: {e}")))?;
        let tmp = self.path.with_extension("json.tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io)?;
        file.write_all(&text).map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)
    }

    /// Whether the host may act for `person` (`hello.onBehalfOf`), or why not.
    pub(crate) fn allowed(&self, person: &str) -> Result<(), String> {
        let registry = self.lock();
        if registry.paired(person) {
            return Ok(());
        }
        Err(match registry.unpaired.get(person) {
            Some(_) => format!(
                "{person} was unpaired from this host; pair again (`nucleic chat pair`, then /cc pair CODE)"
            ),
            None => format!(
                "{person} is not paired with a chat bridge of this host (`nucleic chat pair`, then /cc pair CODE)"
            ),
        })
    }
}

fn summary(
    registry: &Registry,
    bridge: &str,
    report: &ChatBridgeReport,
    at: i64,
    now: i64,
) -> ChatBridgeSummary {
    ChatBridgeSummary {
        bridge: bridge.to_owned(),
        state: report.state,
        last_error: report.last_error.clone(),
        paired: report.paired.iter().filter(|p| registry.counts(p)).cloned().collect(),
        strangers_ignored: report.strangers_ignored,
        outbox_queued: report.outbox_queued,
        reported_at: at,
        silent: now - at > SILENT_AFTER_MS,
    }
}

pub(crate) fn listing(registry: &Registry) -> ChatBridges {
    let now = unix_millis();
    let bridges = registry
        .bridges
        .iter()
        .map(|(id, (report, at))| summary(registry, id, report, *at, now))
        .collect();
    ChatBridges { bridges }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleic_protocol::ChatBridgeState;

    fn report(people: &[(&str, i64)]) -> ChatBridgeReport {
        ChatBridgeReport {
            bridge: "telegram:7".into(),
            state: ChatBridgeState::Running,
            last_error: None,
            paired: people
                .iter()
                .map(|(p, at)| ChatPerson { person: (*p).into(), chat: "1".into(), paired_at: *at })
                .collect(),
            strangers_ignored: 3,
            outbox_queued: 0,
        }
    }

    #[test]
    fn an_unpairing_holds_until_a_later_pairing_and_survives_a_reload() {
        let home = tempfile::tempdir().unwrap();
        let people = ChatPeople::load(home.path()).unwrap();
        assert!(people.allowed("telegram:42").unwrap_err().contains("not paired"));
        {
            let mut r = people.lock();
            r.bridges.insert("telegram:7".into(), (report(&[("telegram:42", 10)]), 0));
        }
        assert_eq!(people.allowed("telegram:42"), Ok(()));
        {
            let mut r = people.lock();
            r.unpaired.insert("telegram:42".into(), 20);
            people.save(&r).unwrap();
        }
        assert!(people.allowed("telegram:42").unwrap_err().contains("was unpaired"));
        let mode = std::fs::metadata(home.path().join(CHAT_BRIDGES_FILE)).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777, 0o600);
        let reloaded = ChatPeople::load(home.path()).unwrap();
        assert!(reloaded.allowed("telegram:42").is_err(), "the unpairing outlives a restart");
        // A stale report (paired before the unpairing) does not bring them back; a new pairing does.
        reloaded.lock().bridges.insert("telegram:7".into(), (report(&[("telegram:42", 15)]), 0));
        assert!(reloaded.allowed("telegram:42").is_err());
        reloaded.lock().bridges.insert("telegram:7".into(), (report(&[("telegram:42", 30)]), 0));
        assert_eq!(reloaded.allowed("telegram:42"), Ok(()));
        std::fs::write(home.path().join(CHAT_BRIDGES_FILE), "{").unwrap();
        assert!(ChatPeople::load(home.path()).unwrap_err().to_string().contains("chat registry"));
    }
}
