//! Claude Code's own sandbox for the commands it runs, configured by Nucleic inside its
//! confinement: the CLI needs its credentials, the commands it runs do not.
//!
//! Nucleic's bubblewrap confines the whole agent tree; inside it, Claude Code runs each Bash
//! command in a second bubblewrap of its own (its `sandbox` settings, handed over with
//! `--settings`). That one hides the CLI's credentials file and key variables from the command,
//! keeps writes to what Nucleic made writable minus the CLI's own state, sends the command's
//! traffic to Nucleic's proxy (`network.httpProxyPort`), and never runs a command outside it
//! (`allowUnsandboxedCommands: false`, `failIfUnavailable: true`). The command is in a child
//! user namespace, so the kernel refuses it the CLI's `/proc/<pid>/environ` and `root` (ptrace
//! access needs the same user namespace).
//!
//! Kernel facts that shape it (observed on Linux 6.18, bubblewrap 0.8.0):
//! - a host run as root gives the outer sandbox a user namespace over kernel uid 0, in which
//!   bubblewrap covers `/proc/sysrq-trigger` and friends; the inner one then cannot mount a
//!   fresh `/proc` ("Can't mount proc … Operation not permitted"), so as root the inner sandbox
//!   keeps the outer `/proc` (`enableWeakerNestedSandbox`); as a user it gets a fresh one;
//! - Claude Code's sandbox needs `socat` (and `bwrap`) on the machine: without them the CLI would
//!   refuse to start, so the sandbox is then left off and the confinement says so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::isolation::{Isolation, Mount};

/// The variables holding Claude Code's own credentials: never in a command's environment.
pub const CREDENTIAL_VARIABLES: &[&str] =
    &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"];

/// Whether Claude Code's sandbox can run its commands here, and with what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandSandbox {
    /// It runs each command: the `--settings` JSON that configures it.
    On { settings: Value },
    /// It cannot run here (why, and what fixes it); commands run in Nucleic's sandbox alone.
    Off { reason: String },
}

impl CommandSandbox {
    /// For a Claude Code confined by `isolation`, with the launch's extra environment `env`
    /// (its `HOME` or `CLAUDE_CONFIG_DIR`, when set there).
    pub fn plan(isolation: &Isolation, env: &[(OsString, OsString)]) -> CommandSandbox {
        let missing = missing_tools();
        if !missing.is_empty() {
            return CommandSandbox::Off {
                reason: format!(
                    "Claude Code's own sandbox is off: it needs {}; the commands it runs can \
                     read its credentials",
                    describe_missing(&missing)
                ),
            };
        }
        CommandSandbox::On { settings: settings(isolation, env, running_as_root()) }
    }

    /// One sentence for the confinement summary.
    pub fn note(&self) -> String {
        match self {
            CommandSandbox::On { .. } => {
                "Claude Code's own sandbox runs its commands, its credentials hidden from them"
                    .to_owned()
            }
            CommandSandbox::Off { reason } => reason.clone(),
        }
    }
}

/// What Claude Code's sandbox needs and this machine's `PATH` lacks, as `(program, Debian
/// package)`.
pub fn missing_tools() -> Vec<(&'static str, &'static str)> {
    [("socat", "socat"), ("bwrap", "bubblewrap")]
        .into_iter()
        .filter(|(tool, _)| find_on_path(tool).is_none())
        .collect()
}

/// `missing` said for a person: "socat (apt-get install socat)".
pub fn describe_missing(missing: &[(&str, &str)]) -> String {
    let tools: Vec<&str> = missing.iter().map(|(t, _)| *t).collect();
    let packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    format!("{} (apt-get install {})", tools.join(" and "), packages.join(" "))
}

/// The `sandbox` settings: see the module docs.
fn settings(isolation: &Isolation, env: &[(OsString, OsString)], as_root: bool) -> Value {
    let state = state_dirs(env);
    let mut writable: Vec<String> = isolation
        .mounts
        .iter()
        .filter_map(|m| match m {
            Mount::Writable(p) if !state.iter().any(|s| p.starts_with(s)) => {
                Some(p.to_string_lossy().into_owned())
            }
            _ => None,
        })
        .collect();
    // The sandbox's own scratch directories (private to this agent in Nucleic's sandbox).
    writable.extend(["/tmp", "/var/tmp", "/dev/shm"].map(String::from));
    let mut files: Vec<Value> = Vec::new();
    for dir in &state {
        files.push(json!({"path": dir.join(".credentials.json"), "mode": "deny"}));
    }
    if let Some(home) = variable(env, "HOME").or_else(|| std::env::var_os("HOME")) {
        // The CLI's configuration: account details, and an API key where one was stored.
        files.push(json!({"path": Path::new(&home).join(".claude.json"), "mode": "deny"}));
    }
    let vars: Vec<Value> =
        CREDENTIAL_VARIABLES.iter().map(|n| json!({"name": n, "mode": "deny"})).collect();
    let mut network = serde_json::Map::new();
    if let Some(bridge) = &isolation.network {
        network.insert("httpProxyPort".into(), json!(bridge.proxy_port));
    }
    json!({"sandbox": {
        "enabled": true,
        "failIfUnavailable": true,
        "allowUnsandboxedCommands": false,
        "enableWeakerNestedSandbox": as_root,
        "filesystem": {"allowWrite": writable},
        "network": network,
        "credentials": {"files": files, "envVars": vars},
    }})
}

/// Claude Code's state directories: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
fn state_dirs(env: &[(OsString, OsString)]) -> Vec<PathBuf> {
    let lookup = |name: &str| variable(env, name).or_else(|| std::env::var_os(name));
    match (lookup("CLAUDE_CONFIG_DIR"), lookup("HOME")) {
        (Some(dir), _) => vec![PathBuf::from(dir)],
        (None, Some(home)) => vec![Path::new(&home).join(".claude")],
        (None, None) => Vec::new(),
    }
}

fn variable(env: &[(OsString, OsString)], name: &str) -> Option<OsString> {
    env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// Whether this process runs as root (its agents' sandbox then sits over kernel uid 0).
fn running_as_root() -> bool {
    nix::unistd::getuid().is_root()
}

/// `tool` in a directory of `PATH`, as an executable file.
fn find_on_path(tool: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(tool)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::NetworkBridge;

    fn confined() -> Isolation {
        let mut i = Isolation::new("/usr/bin/bwrap".into());
        i.mounts = vec![
            Mount::Hide("/h".into()),
            Mount::Writable("/w/tree".into()),
            Mount::Writable("/repo/.git/objects".into()),
            Mount::Writable("/h/.claude/projects".into()),
            Mount::ReadOnly("/repo/.git/config".into()),
        ];
        i.network = Some(NetworkBridge {
            program: "/bin/nucleic".into(),
            socket_dir: "/run/x".into(),
            proxy_port: 3128,
            forwards: Vec::new(),
            allowed: Vec::new(),
        });
        i
    }

    #[test]
    fn commands_write_what_nucleic_made_writable_but_not_the_clis_state() {
        let env = vec![(OsString::from("HOME"), OsString::from("/h"))];
        let s = settings(&confined(), &env, false);
        let allow = &s["sandbox"]["filesystem"]["allowWrite"];
        assert_eq!(
            allow,
            &json!(["/w/tree", "/repo/.git/objects", "/tmp", "/var/tmp", "/dev/shm"]),
            "{s}"
        );
        assert_eq!(s["sandbox"]["network"]["httpProxyPort"], 3128);
        assert_eq!(s["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(s["sandbox"]["failIfUnavailable"], true);
        assert_eq!(s["sandbox"]["enableWeakerNestedSandbox"], false);
    }

    #[test]
    fn the_credentials_file_the_config_and_the_key_variables_are_denied() {
        let env = vec![(OsString::from("HOME"), OsString::from("/h"))];
        let s = settings(&confined(), &env, true);
        assert_eq!(
            s["sandbox"]["credentials"]["files"],
            json!([
                {"path": "/h/.claude/.credentials.json", "mode": "deny"},
                {"path": "/h/.claude.json", "mode": "deny"},
            ])
        );
        let vars = s["sandbox"]["credentials"]["envVars"].to_string();
        for v in CREDENTIAL_VARIABLES {
            assert!(vars.contains(v), "{vars}");
        }
        assert_eq!(s["sandbox"]["enableWeakerNestedSandbox"], true, "as root: no fresh /proc");
    }

    #[test]
    fn a_config_dir_moves_the_credentials() {
        let env = vec![
            (OsString::from("HOME"), OsString::from("/h")),
            (OsString::from("CLAUDE_CONFIG_DIR"), OsString::from("/cfg")),
        ];
        let s = settings(&confined(), &env, false);
        assert_eq!(s["sandbox"]["credentials"]["files"][0]["path"], "/cfg/.credentials.json");
    }
}
