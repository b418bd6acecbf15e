//! Codex's own sandbox for the commands it runs, configured by Nucleic inside its confinement:
//! the CLI needs its credentials, the commands it runs do not.
//!
//! Nucleic's bubblewrap confines the whole agent tree; inside it, Codex runs every command in a
//! second sandbox of its own (bubblewrap, its bundled one). Nucleic hands Codex a permissions
//! profile of its own (`-c default_permissions="nucleic"`, `-c permissions.nucleic={…}`) instead
//! of a legacy `sandbox` mode: the profile's filesystem denies the CLI's credential files
//! (`$CODEX_HOME/auth.json`, `.credentials.json`, `config.toml`: `"none"`), writes only to what
//! Nucleic made writable minus the CLI's own state, and has network — Nucleic's network
//! namespace, whose only way out is Nucleic's proxy. `shell_environment_policy.exclude` keeps
//! the key variables out of every command's environment.
//!
//! Observed with codex 0.171.0 inside Nucleic's sandbox, as root (see `docs/security.md`):
//! - a thread's legacy `sandbox` parameter replaces the profile, so a confined thread is started
//!   and resumed without one;
//! - deny entries hold for an escalated command a person approved too (codex keeps them
//!   "non-escalatable"), and so does the rest of the profile: without network in it, no approved
//!   command could reach the network at all;
//! - the command is refused (`EACCES`) the `/proc/<pid>/environ` and `root` of every process
//!   outside Codex's sandbox — the CLI, its Node launcher, Nucleic's bridge, which hold the key in
//!   their environment; codex itself is dumpable (a sibling outside that sandbox reads them), so
//!   this is the inner sandbox's doing;
//! - a profile cannot extend `:danger-full-access`, and `":root" = "write"` fails under
//!   Nucleic's read-only `/` (codex tries to protect `/.git`): full access is `:workspace` plus
//!   Nucleic's writable paths.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::isolation::{Isolation, Mount};

/// The name of the permissions profile Nucleic gives Codex.
pub const PROFILE: &str = "nucleic";

/// The variables holding Codex's own credentials (besides each provider's `env_key` in its
/// configuration): never in a command's environment.
pub const CREDENTIAL_VARIABLES: &[&str] =
    &["OPENAI_API_KEY", "CODEX_API_KEY", "AZURE_OPENAI_API_KEY"];

/// Files in `$CODEX_HOME` the commands never read: the login (`auth.json`), MCP servers' OAuth
/// tokens (`.credentials.json`) and the configuration (bearer tokens and headers may be in it).
pub const CREDENTIAL_FILES: &[&str] = &["auth.json", ".credentials.json", "config.toml"];

/// The `-c` overrides that put Codex's commands in Nucleic's profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSandbox {
    /// `KEY=VALUE` (TOML values), each passed after `-c`.
    pub overrides: Vec<String>,
}

impl CommandSandbox {
    /// For a Codex confined by `isolation` with the legacy sandbox mode `sandbox`
    /// (`read-only`, `workspace-write`, `danger-full-access`), its state directory
    /// `codex_home` (else `$CODEX_HOME`, else `~/.codex`, from `env` or inherited).
    pub fn plan(
        isolation: &Isolation,
        env: &[(OsString, OsString)],
        codex_home: Option<&Path>,
        sandbox: &str,
        cwd: &Path,
    ) -> CommandSandbox {
        let state = state_dir(env, codex_home);
        // A worktree Nucleic keeps read-only (the `readonly` mode) is read-only here too: under
        // `:workspace` codex would mkdir its protected `.codex` in it, fail, and refuse the thread.
        let read_only = sandbox == "read-only" || !writable(isolation, cwd);
        let mut entries: Vec<(String, &str)> = Vec::new();
        if !read_only {
            for mount in &isolation.mounts {
                if let Mount::Writable(p) = mount
                    && !state.iter().any(|s| p.starts_with(s))
                    && p.exists()
                {
                    entries.push((p.to_string_lossy().into_owned(), "write"));
                }
            }
        }
        for dir in &state {
            for file in CREDENTIAL_FILES {
                entries.push((dir.join(file).to_string_lossy().into_owned(), "none"));
            }
        }
        let filesystem: Vec<String> = entries
            .iter()
            .map(|(path, access)| format!("{}={}", quote(path), quote(access)))
            .collect();
        let extends = if read_only { ":read-only" } else { ":workspace" };
        // Network on in every mode: the only way out is Nucleic's proxy, which decides (an
        // escalated command keeps the profile, so without it no approved command could fetch).
        let profile = format!(
            "extends={},filesystem={{{}}},network={{enabled=true}}",
            quote(extends),
            filesystem.join(",")
        );
        let mut variables: Vec<String> =
            CREDENTIAL_VARIABLES.iter().map(|v| (*v).to_owned()).collect();
        for dir in &state {
            for name in provider_key_variables(&dir.join("config.toml")) {
                if !variables.contains(&name) {
                    variables.push(name);
                }
            }
        }
        let excluded: Vec<String> = variables.iter().map(|v| quote(v)).collect();
        CommandSandbox {
            overrides: vec![
                format!("default_permissions={}", quote(PROFILE)),
                format!("permissions.{PROFILE}={{{profile}}}"),
                format!("shell_environment_policy.exclude=[{}]", excluded.join(",")),
            ],
        }
    }

    /// `-c KEY=VALUE` for each override.
    pub fn args(&self) -> impl Iterator<Item = OsString> + '_ {
        self.overrides.iter().flat_map(|kv| [OsString::from("-c"), OsString::from(kv)])
    }

    /// One sentence for the confinement summary.
    pub fn note(&self) -> String {
        "Codex's own sandbox runs its commands, its credentials hidden from them".to_owned()
    }
}

/// Whether `cwd` is writable in Nucleic's sandbox: the last mount covering it is writable.
fn writable(isolation: &Isolation, cwd: &Path) -> bool {
    let covering = isolation.mounts.iter().rev().find(|m| cwd.starts_with(m.path()));
    matches!(covering, Some(Mount::Writable(_)))
}

/// A TOML basic string (JSON's escapes are TOML's).
fn quote(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// Codex's state directory, as given and canonical (both when they differ).
fn state_dir(env: &[(OsString, OsString)], codex_home: Option<&Path>) -> Vec<PathBuf> {
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os(name))
    };
    let dir = match (codex_home, lookup("CODEX_HOME"), lookup("HOME")) {
        (Some(dir), _, _) => dir.to_owned(),
        (None, Some(dir), _) => PathBuf::from(dir),
        (None, None, Some(home)) => Path::new(&home).join(".codex"),
        (None, None, None) => return Vec::new(),
    };
    let mut dirs = vec![dir.clone()];
    if let Ok(real) = dir.canonicalize()
        && real != dir
    {
        dirs.push(real);
    }
    dirs
}

/// The `env_key`s of the providers in Codex's configuration (`env_key = "NAME"` lines).
fn provider_key_variables(config: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(config).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once('=')?;
            let name = value.trim().trim_matches('"');
            (key.trim() == "env_key" && !name.is_empty()).then(|| name.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confined(dir: &Path) -> Isolation {
        let mut i = Isolation::new("/usr/bin/bwrap".into());
        for sub in ["tree", "objects", "codex"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        i.mounts = vec![
            Mount::Hide(dir.join("home")),
            Mount::Writable(dir.join("tree")),
            Mount::Writable(dir.join("objects")),
            Mount::Writable(dir.join("absent")),
            Mount::Writable(dir.join("codex")),
            Mount::ReadOnly(dir.join("codex/config.toml")),
        ];
        i
    }

    #[test]
    fn commands_write_what_nucleic_made_writable_never_the_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        let isolation = confined(&dir);
        let config = "[model_providers.m]\nenv_key = \"MOCK_KEY\"\n";
        std::fs::write(dir.join("codex/config.toml"), config).unwrap();
        let s = CommandSandbox::plan(
            &isolation,
            &[],
            Some(&dir.join("codex")),
            "workspace-write",
            &dir.join("tree"),
        );
        let d = dir.to_string_lossy();
        assert_eq!(s.overrides[0], "default_permissions=\"nucleic\"");
        assert_eq!(
            s.overrides[1],
            format!(
                "permissions.nucleic={{extends=\":workspace\",filesystem={{\"{d}/tree\"=\"write\",\
                 \"{d}/objects\"=\"write\",\"{d}/codex/auth.json\"=\"none\",\
                 \"{d}/codex/.credentials.json\"=\"none\",\"{d}/codex/config.toml\"=\"none\"}},\
                 network={{enabled=true}}}}"
            )
        );
        assert_eq!(
            s.overrides[2],
            "shell_environment_policy.exclude=[\"OPENAI_API_KEY\",\"CODEX_API_KEY\",\
             \"AZURE_OPENAI_API_KEY\",\"MOCK_KEY\"]"
        );
        let args: Vec<OsString> = s.args().collect();
        assert_eq!((args.len(), args[0].to_str()), (6, Some("-c")));
    }

    #[test]
    fn read_only_writes_nothing_and_every_mode_goes_out_through_nucleic() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("codex");
        let tree = dir.path().join("tree");
        let ro = CommandSandbox::plan(&confined(dir.path()), &[], Some(&home), "read-only", &tree);
        assert!(ro.overrides[1].contains("extends=\":read-only\""), "{ro:?}");
        assert!(!ro.overrides[1].contains("\"write\""), "{ro:?}");
        assert!(ro.overrides[1].contains("auth.json\"=\"none\""), "{ro:?}");
        let full = CommandSandbox::plan(
            &confined(dir.path()),
            &[],
            Some(&home),
            "danger-full-access",
            &tree,
        );
        assert!(ro.overrides[1].ends_with(",network={enabled=true}}"), "{ro:?}");
        assert!(full.overrides[1].ends_with(",network={enabled=true}}"), "{full:?}");
        assert!(full.overrides[1].contains("extends=\":workspace\""), "{full:?}");
        // A worktree Nucleic keeps read-only (`readonly` mode): read-only for codex too.
        let outside = dir.path().join("elsewhere");
        let kept = CommandSandbox::plan(
            &confined(dir.path()),
            &[],
            Some(&home),
            "workspace-write",
            &outside,
        );
        assert!(kept.overrides[1].contains("extends=\":read-only\""), "{kept:?}");
        assert!(!kept.overrides[1].contains("\"write\""), "{kept:?}");
    }

    #[test]
    fn the_state_dir_comes_from_codex_home_else_home() {
        let env = |k: &str, v: &str| vec![(OsString::from(k), OsString::from(v))];
        assert_eq!(
            state_dir(&env("CODEX_HOME", "/nowhere/c"), None),
            [PathBuf::from("/nowhere/c")]
        );
        assert_eq!(
            state_dir(&env("HOME", "/nowhere/h"), None)[0],
            PathBuf::from("/nowhere/h/.codex")
        );
    }
}
