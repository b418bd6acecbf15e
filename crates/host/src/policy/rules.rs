//! Nucleic's rule files (`$NUCLEIC_HOME/rules.json` for the host, `projects/<id>/rules.json` for a
//! project): Claude Code's settings shape, edited in place — other keys (`mode`) kept, written
//! whole (temporary file + rename, 0600) under an exclusive lock, so the daemon and `nucleic
//! rules` never lose each other's rules. Sessions pick a change up at their next tool call.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use nucleic_policy::Behaviour;
use nucleic_policy::{Mode, Rule};
use serde_json::{Map, Value, json};

use crate::config::HostConfig;
use crate::error::HostError;

/// Which of Nucleic's rule files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleFile {
    /// Every project of the host.
    Host,
    /// One project (by id).
    Project(String),
}

impl RuleFile {
    /// Where the file is.
    pub fn path(&self, home: &Path) -> PathBuf {
        match self {
            RuleFile::Host => home.join("rules.json"),
            RuleFile::Project(id) => home.join("projects").join(id).join("rules.json"),
        }
    }
}

/// One rule of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRule {
    pub behaviour: Behaviour,
    pub rule: String,
}

const KEYS: [(&str, Behaviour); 3] =
    [("allow", Behaviour::Allow), ("ask", Behaviour::Ask), ("deny", Behaviour::Deny)];

/// The rules of `path` (none when it does not exist); a malformed file is an error naming it.
pub fn list_rules(path: &Path) -> Result<Vec<FileRule>, HostError> {
    let root = read(path)?;
    let mut rules = Vec::new();
    for (key, behaviour) in KEYS {
        for rule in strings(&root, key, path)? {
            rules.push(FileRule { behaviour, rule });
        }
    }
    Ok(rules)
}

/// Adds `rule` with `behaviour` to `path` (created if missing); false when it was there already.
pub fn add_rule(path: &Path, behaviour: Behaviour, rule: &str) -> Result<bool, HostError> {
    let rule = Rule::parse(rule).map_err(|e| HostError::Invalid(e.to_string()))?.text;
    edit(path, |root| {
        let key = key_of(behaviour);
        let mut list = strings(root, key, path)?;
        if list.contains(&rule) {
            return Ok(false);
        }
        list.push(rule.clone());
        set(root, key, list);
        Ok(true)
    })
}

/// Removes `rule` (whatever its behaviour) from `path`; how many entries went.
pub fn remove_rule(path: &Path, rule: &str) -> Result<usize, HostError> {
    let rule = rule.trim().to_owned();
    edit(path, |root| {
        let mut removed = 0;
        for (key, _) in KEYS {
            let list = strings(root, key, path)?;
            let kept: Vec<String> = list.iter().filter(|r| **r != rule).cloned().collect();
            if kept.len() != list.len() {
                removed += list.len() - kept.len();
                set(root, key, kept);
            }
        }
        Ok(removed)
    })
}

/// The approval timeout a rule file sets (`"approvalTimeoutSecs": N`): pending approvals of the
/// project's (or the host's) sessions are denied after N seconds. `None` when the file or the key
/// is missing; an error names the file when the value is not a whole number of seconds.
pub fn approval_timeout(path: &Path) -> Result<Option<Duration>, HostError> {
    let root = read(path)?;
    match root.get(APPROVAL_TIMEOUT_KEY) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(secs) if secs > 0 => Ok(Some(Duration::from_secs(secs))),
            _ => Err(malformed(
                path,
                &format!("`{APPROVAL_TIMEOUT_KEY}` is not a positive whole number"),
            )),
        },
    }
}

/// The default mode of new sessions a rule file sets (`"mode": "readonly" | "edit" | "full"`).
/// `None` when the file or the key is missing; an error names the file for any other value.
pub fn read_mode(path: &Path) -> Result<Option<Mode>, HostError> {
    let root = read(path)?;
    match root.get(MODE_KEY) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_str().and_then(Mode::parse).map(Some).ok_or_else(|| {
            malformed(path, &format!("`{MODE_KEY}` is not one of readonly, edit, full: {v}"))
        }),
    }
}

/// Sets (or with `None` removes) the default mode in `path`, keeping everything else.
pub fn write_mode(path: &Path, mode: Option<Mode>) -> Result<(), HostError> {
    edit(path, |root| {
        match mode {
            Some(mode) => root.insert(MODE_KEY.to_owned(), json!(mode.as_str())),
            None => root.remove(MODE_KEY),
        };
        Ok(())
    })
}

/// The key of the default mode in a rule file.
pub const MODE_KEY: &str = "mode";

/// The key of the approval timeout in a rule file.
pub const APPROVAL_TIMEOUT_KEY: &str = "approvalTimeoutSecs";

impl HostConfig {
    /// The path of one of Nucleic's rule files of this host.
    pub fn rule_file(&self, file: &RuleFile) -> PathBuf {
        file.path(&self.home)
    }
}

fn key_of(behaviour: Behaviour) -> &'static str {
    match behaviour {
        Behaviour::Allow => "allow",
        Behaviour::Ask => "ask",
        Behaviour::Deny => "deny",
    }
}

fn read(path: &Path) -> Result<Map<String, Value>, HostError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(HostError::Invalid(format!("{}: cannot read: {e}", path.display()))),
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(root)) => Ok(root),
        Ok(_) => Err(malformed(path, "the top level is not an object")),
        Err(e) => Err(malformed(path, &e.to_string())),
    }
}

fn malformed(path: &Path, why: &str) -> HostError {
    HostError::Invalid(format!("{}: malformed rule file, left unchanged: {why}", path.display()))
}

fn strings(root: &Map<String, Value>, key: &str, path: &Path) -> Result<Vec<String>, HostError> {
    let Some(permissions) = root.get("permissions") else { return Ok(Vec::new()) };
    let Value::Object(permissions) = permissions else {
        return Err(malformed(path, "`permissions` is not an object"));
    };
    match permissions.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_str().map(str::to_owned).ok_or_else(|| {
                    malformed(path, &format!("`permissions.{key}` holds a non-string entry"))
                })
            })
            .collect(),
        Some(_) => Err(malformed(path, &format!("`permissions.{key}` is not a list"))),
    }
}

fn set(root: &mut Map<String, Value>, key: &str, list: Vec<String>) {
    let permissions = root.entry("permissions").or_insert_with(|| json!({}));
    if let Value::Object(permissions) = permissions {
        permissions.insert(key.to_owned(), json!(list));
    }
}

/// Read, change, write `path` under its lock (waiting up to 5 s for it).
fn edit<T>(
    path: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<T, HostError>,
) -> Result<T, HostError> {
    let io = |e: std::io::Error| HostError::Invalid(format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut lock_name = path.file_name().unwrap_or_default().to_os_string();
    lock_name.push(".lock");
    let lock_path = path.with_file_name(lock_name);
    let deadline = Instant::now() + Duration::from_secs(5);
    let _lock = loop {
        if let Some(lock) = nucleic_core::try_lock_file(&lock_path).map_err(io)? {
            break lock;
        }
        if Instant::now() > deadline {
            return Err(HostError::Invalid(format!(
                "{}: another writer held the rule file's lock for 5 s",
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut root = read(path)?;
    let result = change(&mut root)?;
    let mut text = serde_json::to_string_pretty(&Value::Object(root))
        .map_err(|e| HostError::Invalid(e.to_string()))?;
    text.push('\n');
    crate::lifecycle::private::write_private_file(path, text.as_bytes()).map_err(io)?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_added_once_listed_and_removed_keeping_other_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = RuleFile::Project("p1".into()).path(dir.path());
        assert_eq!(list_rules(&path).unwrap(), []);
        assert!(add_rule(&path, Behaviour::Allow, "Bash(make test)").unwrap());
        assert!(!add_rule(&path, Behaviour::Allow, "Bash(make test)").unwrap());
        assert!(add_rule(&path, Behaviour::Deny, "WebFetch").unwrap());
        let text =
            std::fs::read_to_string(&path).unwrap().replace("{\n", "{\n  \"mode\": \"full\",\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(remove_rule(&path, "WebFetch").unwrap(), 1);
        let rules = list_rules(&path).unwrap();
        assert_eq!(
            rules,
            [FileRule { behaviour: Behaviour::Allow, rule: "Bash(make test)".into() }]
        );
        let root: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(root["mode"], "full");
        let e = add_rule(&path, Behaviour::Allow, "Bash(ls").unwrap_err().to_string();
        assert!(!e.is_empty());
    }

    #[test]
    fn the_default_mode_is_written_and_read_keeping_the_rules() {
        let dir = tempfile::tempdir().unwrap();
        let path = RuleFile::Project("p1".into()).path(dir.path());
        assert_eq!(read_mode(&path).unwrap(), None);
        add_rule(&path, Behaviour::Deny, "WebFetch").unwrap();
        write_mode(&path, Some(Mode::Readonly)).unwrap();
        assert_eq!(read_mode(&path).unwrap(), Some(Mode::Readonly));
        assert_eq!(list_rules(&path).unwrap().len(), 1);
        write_mode(&path, None).unwrap();
        assert_eq!(read_mode(&path).unwrap(), None);
        std::fs::write(&path, r#"{"mode": "yolo"}"#).unwrap();
        let e = read_mode(&path).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()) && e.contains("yolo"), "{e}");
    }

    #[test]
    fn a_malformed_file_is_named_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = RuleFile::Host.path(dir.path());
        std::fs::write(&path, r#"{"permissions":{"allow":"Bash"}}"#).unwrap();
        let e = add_rule(&path, Behaviour::Allow, "Read").unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()) && e.contains("not a list"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"permissions":{"allow":"Bash"}}"#);
    }
}
