//! What an agent's sandbox lets through, decided by the host for one agent start: which of the
//! person's files are hidden, what is bound back read-only or writable (its worktree, what git
//! needs to commit there, the agent CLI's own state), which files stay read-only whatever
//! (policy files, git's configuration), and where its network bridge leads.

use std::path::{Path, PathBuf};

use super::settings_folders::settings_dir;
use nucleic_agents::backend::{ConfinementNeeds, PROJECT_SETTINGS_DIRS, StateDir};
use nucleic_agents::describe;
use nucleic_agents::isolation::{Isolation, Mount, NetworkBridge};
use nucleic_protocol::{Backend, ProjectSandbox};

use crate::config::HostConfig;

/// Directories and files of a home the agent still sees, read-only: toolchains and their
/// read-only configuration. Everything else of the home is absent (an empty, private tmpfs).
pub const HOME_READ_ONLY: &[&str] = &[
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".cargo/env",
    ".cargo/config.toml",
    ".cargo/config",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".local/bin",
    ".local/lib",
    ".local/share/pnpm",
    ".bun",
    ".deno",
    "go",
    ".gitconfig",
    ".config/git",
];

/// Files of the machine outside any home that hold secrets root can read (a host run as root
/// gives its agents root's file access, though no capability): always hidden.
pub const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/var/lib/sss",
    "/var/lib/docker",
    "/var/lib/containers",
];

/// The variables naming scratch directories a launch set on purpose (tests give each agent its
/// own); they stay writable inside.
const SCRATCH_VARIABLES: &[&str] = &["TMPDIR", "CLAUDE_CODE_TMPDIR", "XDG_RUNTIME_DIR"];

/// What Claude Code writes under `~/.claude` (its row in `nucleic_agents` says).
pub use nucleic_agents::claude::CLAUDE_WRITABLE;

/// The HTTP proxy's port inside a sandbox (its own loopback: no clash with the host's).
pub const SANDBOX_PROXY_PORT: u16 = 3128;

/// Where one agent start runs, as the confinement needs it.
#[derive(Debug, Clone)]
pub struct AgentPlace<'a> {
    pub backend: Backend,
    /// The agent's working directory (a session's worktree, or a checkout for an in-place run).
    pub cwd: &'a Path,
    /// The session, whose egress socket directory the bridge leads to (`None`: no network).
    pub session_id: Option<&'a str>,
    /// The worktree is read-only too (the `readonly` mode).
    pub read_only: bool,
    /// The agent's executable (bound back read-only when it lives in a hidden home).
    pub program: &'a Path,
    /// The project's additions (checked when they were set: `validate_sandbox`).
    pub sandbox: &'a ProjectSandbox,
}

/// The sandbox of one agent start: `bwrap` found, every path decided.
pub fn plan(config: &HostConfig, bwrap: PathBuf, place: &AgentPlace<'_>) -> Isolation {
    let mut iso = Isolation::new(bwrap);
    let (m, made_first) = (&mut iso.mounts, &mut iso.made_first);
    let homes = homes(config);
    m.push(Mount::Hide(canonical(&config.home)));
    m.extend(homes.iter().cloned().map(Mount::Hide));
    m.extend(SYSTEM_SECRETS.iter().map(|p| Mount::Hide(p.into())));
    m.extend(host_keys().into_iter().map(Mount::Hide));
    for home in &homes {
        m.extend(HOME_READ_ONLY.iter().map(|entry| Mount::ReadOnly(home.join(entry))));
    }
    // The agent's install, Nucleic's own, and the interpreter the agent's first line names
    // (`#!/usr/bin/env node`: under nvm, node lives in the hidden home too) — never a folder
    // that holds a hidden home or Nucleic's data.
    let interpreter = interpreter_of(place.program);
    let programs =
        [Some(place.program), Some(config.agents.nucleic.as_path()), interpreter.as_deref()];
    let hidden: Vec<PathBuf> = homes.iter().cloned().chain([canonical(&config.home)]).collect();
    for program in programs.into_iter().flatten() {
        let Some(root) = install_root(program) else { continue };
        if !hidden.iter().any(|h| h.starts_with(&root)) {
            m.push(Mount::ReadOnly(root));
        } else if let Some(file) = nucleic_agents::process::real_program(program) {
            // Its folder would show the home: the file alone.
            m.push(Mount::ReadOnly(file));
        }
    }
    let cwd = canonical(place.cwd);
    // The checkout holding the worktree, read-only (it may be under a hidden home).
    m.push(Mount::ReadOnly(checkout_of(&cwd).unwrap_or_else(|| cwd.clone())));
    if !place.read_only {
        m.push(Mount::Writable(cwd.clone()));
        git_writes(&cwd, m, made_first);
    }
    let needs = &describe(place.backend).confinement;
    agent_state(config, needs, m, made_first);
    for name in SCRATCH_VARIABLES {
        if let Some(dir) = env_value(config, name).map(PathBuf::from)
            && dir.is_dir()
            && !homes.contains(&dir)
            && dir != Path::new("/")
        {
            m.push(Mount::Writable(dir));
        }
    }
    // The session's attachments (files sent from a chat): readable, never writable.
    if let Some(id) = place.session_id {
        let dir = crate::sessions::attachments::attachments_dir(config, id);
        if dir.is_dir() {
            m.push(Mount::ReadOnly(canonical(&dir)));
        }
    }
    // The project's own additions: hidden, read-only, writable, in that order.
    m.extend(place.sandbox.hide.iter().map(|p| Mount::Hide(p.into())));
    m.extend(place.sandbox.read_only.iter().map(|p| Mount::ReadOnly(p.into())));
    m.extend(place.sandbox.writable.iter().map(|p| Mount::Writable(p.into())));
    // The folders agent CLIs load project settings from (hooks there run unasked, outside the
    // CLI's own sandbox): read-only, made first when absent so none can be created.
    if !place.read_only {
        let seeds = needs.settings_seeds;
        m.extend(PROJECT_SETTINGS_DIRS.iter().filter_map(|name| settings_dir(&cwd, name, seeds)));
    }
    // Its configuration files (Claude Code's MCP servers it would start, trust, onboarding): a
    // private copy, read and rewritten freely, never written back.
    for name in needs.private_copies {
        let file = canonical(&crate::policy::agent_home(config)).join(name);
        iso.copies.push((file.clone(), file));
    }
    // A commit runs no garbage collection (it would rewrite packs it cannot write).
    iso.env.extend([
        ("GIT_CONFIG_COUNT".to_owned(), "1".to_owned()),
        ("GIT_CONFIG_KEY_0".to_owned(), "gc.auto".to_owned()),
        ("GIT_CONFIG_VALUE_0".to_owned(), "0".to_owned()),
    ]);
    iso.network = place.session_id.map(|id| {
        let forwards = loopback_forwards(config, place.backend);
        let mut allowed = model_endpoints(config, place.backend);
        allowed.extend(place.sandbox.allow_domains.iter().cloned());
        NetworkBridge {
            program: config.agents.nucleic.clone(),
            socket_dir: egress_dir(config, id),
            proxy_port: proxy_port(&forwards),
            forwards,
            allowed,
        }
    });
    iso
}

/// The directory holding session `id`'s egress proxy socket.
pub fn egress_dir(config: &HostConfig, id: &str) -> PathBuf {
    config.home.join("egress").join(id)
}

/// The homes an agent could find the person's files in: the one it runs with, the host's, and
/// root's when the host is root.
pub fn homes(config: &HostConfig) -> Vec<PathBuf> {
    let mut homes = vec![canonical(&crate::policy::agent_home(config))];
    let root = nix::unistd::getuid().is_root().then(|| PathBuf::from("/root"));
    for other in std::env::var_os("HOME").map(PathBuf::from).into_iter().chain(root) {
        let other = canonical(&other);
        if !homes.contains(&other) {
            homes.push(other);
        }
    }
    homes.retain(|h| h.as_os_str().len() > 1);
    homes
}

/// The model endpoints an agent of `backend` must reach (`host:port`), from its configuration:
/// the base URL it is given, else the vendor's API.
pub fn model_endpoints(config: &HostConfig, backend: Backend) -> Vec<String> {
    let needs = &describe(backend).confinement;
    let wanted = needs.endpoints;
    let set: Vec<String> =
        wanted.base_url_variables.iter().filter_map(|name| env_value(config, name)).collect();
    let mut found: Vec<String> = set.iter().filter_map(|url| endpoint_of(url)).collect();
    if let Some(state) = &needs.state_dir {
        found.extend(config_endpoints(config, state));
    }
    let use_defaults =
        if wanted.defaults_only_when_unset { set.is_empty() } else { found.is_empty() };
    if use_defaults {
        found = wanted.defaults.iter().map(|e| (*e).to_owned()).collect();
    }
    found
}

/// The model endpoints on this machine's loopback, forwarded into the sandbox.
fn loopback_forwards(config: &HostConfig, backend: Backend) -> Vec<String> {
    model_endpoints(config, backend).into_iter().filter(|e| e.starts_with("127.0.0.1:")).collect()
}

fn proxy_port(forwards: &[String]) -> u16 {
    (SANDBOX_PROXY_PORT..u16::MAX)
        .find(|p| !forwards.iter().any(|f| f.ends_with(&format!(":{p}"))))
        .unwrap_or(SANDBOX_PROXY_PORT)
}

/// `host:port` of an `http(s)://` URL (`localhost` read as `127.0.0.1`).
pub fn endpoint_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let default_port = match scheme {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h, p.parse::<u16>().ok()?)
        }
        _ => (authority, default_port),
    };
    let host = if host.eq_ignore_ascii_case("localhost") { "127.0.0.1" } else { host };
    (!host.is_empty()).then(|| format!("{}:{port}", host.to_ascii_lowercase()))
}

/// The `base_url`s of an agent's configuration file (Codex's `$CODEX_HOME/config.toml`).
fn config_endpoints(config: &HostConfig, state: &StateDir) -> Vec<String> {
    let Some(file) = state.base_urls_in else { return Vec::new() };
    let dir = state_dir(config, state);
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once('=')?;
            (key.trim() == "base_url").then(|| value.trim().trim_matches('"').to_owned())
        })
        .filter_map(|url| endpoint_of(&url))
        .collect()
}

/// An agent's state directory: its variable's value, else its place under the agent's home.
fn state_dir(config: &HostConfig, state: &StateDir) -> PathBuf {
    match env_value(config, state.variable).map(PathBuf::from) {
        Some(dir) => state.within.map_or_else(|| dir.clone(), |sub| dir.join(sub)),
        None => crate::policy::agent_home(config).join(state.default),
    }
}

/// What the agent CLI itself must write: its state, never the settings the host reads as policy.
fn agent_state(
    config: &HostConfig,
    needs: &ConfinementNeeds,
    m: &mut Vec<Mount>,
    made_first: &mut Vec<PathBuf>,
) {
    let home = canonical(&crate::policy::agent_home(config));
    if let Some((dir, writable)) = needs.home_state {
        // Its conversations and scratch state are writable (resume needs them); the rest of
        // the directory — settings, plugins, agents, commands, hooks, credentials — is
        // read-only: what a later run by the person would load or execute.
        let dir = home.join(dir);
        m.push(Mount::ReadOnly(dir.clone()));
        for name in writable {
            let sub = dir.join(name);
            let _ = std::fs::create_dir_all(&sub);
            m.push(Mount::Writable(sub));
        }
    }
    if let Some(state) = &needs.state_dir {
        let dir = canonical(&state_dir(config, state));
        m.push(Mount::Writable(dir.clone()));
        m.extend(state.read_only.iter().map(|file| Mount::ReadOnly(dir.join(file))));
        made_first.extend(state.read_only.iter().map(|file| dir.join(file)));
        for name in state.read_only_dirs {
            // Made first when absent (a missing path is not bound): the agent cannot create it.
            let sub = dir.join(name);
            let _ = std::fs::create_dir_all(&sub);
            m.push(Mount::ReadOnly(sub));
        }
    }
}

/// What git needs writable to commit in worktree `cwd`: the repository's objects, the worktree's
/// own admin dir, the session branches' refs and logs, the stash — never the repository's
/// `config`, `hooks/`, `info/`, the person's branches and tags, nor the `.git` link itself.
fn git_writes(cwd: &Path, m: &mut Vec<Mount>, made_first: &mut Vec<PathBuf>) {
    let link = cwd.join(".git");
    if link.is_dir() {
        // A checkout the agent works in place: its branches are the person's to have it
        // commit on; only git's configuration and hooks are fenced off.
        // Its folders are made first when absent (a missing one would be the agent's to make).
        m.push(Mount::ReadOnly(link.join("config")));
        for name in ["hooks", "info", "modules"] {
            let _ = std::fs::create_dir_all(link.join(name));
            m.push(Mount::ReadOnly(link.join(name)));
        }
        return;
    }
    m.push(Mount::ReadOnly(link.clone()));
    let Some(admin) = linked_admin_dir(&link) else { return };
    let Some(common) = admin.parent().and_then(Path::parent).map(Path::to_owned) else { return };
    let session_refs = common.join("refs/heads").join(branch_dir());
    let session_logs = common.join("logs/refs/heads").join(branch_dir());
    let _ = std::fs::create_dir_all(&session_refs);
    let _ = std::fs::create_dir_all(&session_logs);
    m.extend(
        [common.join("objects"), common.join("refs"), common.join("logs")].map(Mount::Writable),
    );
    for dir in ["refs/heads", "refs/tags", "refs/remotes", "logs/refs/heads", "logs/refs/remotes"] {
        // Made first when absent (a fresh clone has no refs/remotes): inside the writable
        // `refs`, the agent could otherwise plant remote-tracking refs the person trusts.
        let _ = std::fs::create_dir_all(common.join(dir));
        m.push(Mount::ReadOnly(common.join(dir)));
    }
    m.extend([session_refs, session_logs, admin.clone()].map(Mount::Writable));
    m.push(Mount::ReadOnly(admin.join("config.worktree")));
    made_first.push(admin.join("config.worktree"));
}

/// The directory under `refs/heads` holding every session branch (`nucleic/`).
fn branch_dir() -> &'static str {
    nucleic_git::BRANCH_PREFIX.trim_end_matches('/')
}

/// The admin dir a worktree's `.git` file names, when it is a `worktrees/<name>` directory of
/// a repository (the file is the agent's to write: nothing else is trusted).
fn linked_admin_dir(link: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(link).ok()?;
    let admin = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    let admin = admin.canonicalize().ok()?;
    let parent = admin.parent()?;
    (parent.file_name()? == "worktrees" && parent.parent()?.join("objects").is_dir())
        .then_some(admin)
}

/// The main checkout of a session worktree (`<root>/.nucleic/worktrees/<slug>`).
fn checkout_of(cwd: &Path) -> Option<PathBuf> {
    let worktrees = cwd.parent()?;
    let nucleic = worktrees.parent()?;
    let expected = Path::new(nucleic_git::WORKTREES_DIR);
    let tail: PathBuf = [nucleic.file_name()?, worktrees.file_name()?].iter().collect();
    (tail == expected).then(|| nucleic.parent().map(Path::to_owned)).flatten()
}

/// Where an executable's installation lives: the directory above its `node_modules` (an npm
/// install), else its own directory.
fn install_root(program: &Path) -> Option<PathBuf> {
    let found = if program.is_absolute() {
        program.to_owned()
    } else {
        nucleic_agents::process::which(program)?
    };
    let real = found.canonicalize().ok()?;
    let mut root = PathBuf::new();
    for part in real.components() {
        if part.as_os_str() == "node_modules" {
            return Some(root);
        }
        root.push(part);
    }
    real.parent().map(Path::to_owned)
}

/// The interpreter `program`'s `#!` line runs (`#!/usr/bin/env node` → `node` on `PATH`), if any.
fn interpreter_of(program: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let found = if program.is_absolute() {
        program.to_owned()
    } else {
        nucleic_agents::process::which(program)?
    };
    let mut head = [0u8; 256];
    let n = std::fs::File::open(found).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let first = Path::new(words.next()?);
    if first.file_name() != Some(std::ffi::OsStr::new("env")) {
        return Some(first.to_owned());
    }
    let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    nucleic_agents::process::which(Path::new(name))
}

/// The machine's ssh host keys (`/etc/ssh/ssh_host_*_key`).
fn host_keys() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/etc/ssh") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
        })
        .collect()
}

/// A variable of the agents' environment: `agent_env`, else the host's.
fn env_value(config: &HostConfig, name: &str) -> Option<String> {
    config
        .agent_env
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .or_else(|| std::env::var(name).ok())
        .filter(|v| !v.is_empty())
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_read_from_urls() {
        assert_eq!(endpoint_of("http://127.0.0.1:4321/v1").as_deref(), Some("127.0.0.1:4321"));
        assert_eq!(endpoint_of("http://localhost:80").as_deref(), Some("127.0.0.1:80"));
        assert_eq!(endpoint_of("https://API.example.com").as_deref(), Some("api.example.com:443"));
        assert_eq!(endpoint_of("https://u:p@h.example:8443/x").as_deref(), Some("h.example:8443"));
        assert_eq!(endpoint_of("ftp://h"), None);
        assert_eq!(endpoint_of("nonsense"), None);
    }

    #[test]
    fn the_proxy_port_avoids_a_forwarded_one() {
        assert_eq!(proxy_port(&[]), SANDBOX_PROXY_PORT);
        assert_eq!(proxy_port(&["127.0.0.1:3128".into()]), SANDBOX_PROXY_PORT + 1);
    }

    #[test]
    fn a_session_worktree_names_its_checkout() {
        let root = Path::new("/src/app");
        assert_eq!(checkout_of(&root.join(".nucleic/worktrees/fix-1")).as_deref(), Some(root));
        assert_eq!(checkout_of(Path::new("/src/app/sub/dir")), None);
    }

    fn config_with(home: &Path, env: &[(&str, &str)]) -> HostConfig {
        // Every variable the rows read is set here ("" reads as unset), so the test's own
        // environment does not leak in.
        let mut agent_env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
            ("HOME".into(), home.as_os_str().to_owned()),
            ("ANTHROPIC_BASE_URL".into(), "".into()),
            ("OPENAI_BASE_URL".into(), "".into()),
            ("OPENAI_API_BASE".into(), "".into()),
            ("CODEX_HOME".into(), "".into()),
            ("GOOGLE_GEMINI_BASE_URL".into(), "".into()),
            ("GEMINI_CLI_HOME".into(), "".into()),
        ];
        agent_env.extend(env.iter().map(|(k, v)| ((*k).into(), (*v).into())));
        HostConfig {
            home: home.join("data"),
            agents: crate::config::AgentPaths {
                claude: None,
                codex: None,
                gemini: None,
                opencode: None,
                qwen: None,
                sim_program: "/bin/true".into(),
                sim_prefix: Vec::new(),
                nucleic: "/bin/true".into(),
            },
            limits: crate::config::Limits::default(),
            approval_timeout: None,
            setup_timeout: std::time::Duration::from_secs(10),
            agent_env,
            agent_isolation: crate::config::AgentIsolation::Required,
            keepers: None,
            policy: false,
        }
    }

    #[test]
    fn each_backend_reaches_its_configured_model_or_its_vendors() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let endpoints =
            |env: &[(&str, &str)], backend| model_endpoints(&config_with(home, env), backend);
        assert_eq!(
            endpoints(&[], Backend::ClaudeCode),
            ["api.anthropic.com:443", "console.anthropic.com:443"]
        );
        assert_eq!(
            endpoints(&[], Backend::Codex),
            ["api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443"]
        );
        assert!(endpoints(&[], Backend::Simulated).is_empty());
        let local = [("ANTHROPIC_BASE_URL", "http://127.0.0.1:4123")];
        assert_eq!(endpoints(&local, Backend::ClaudeCode), ["127.0.0.1:4123"]);
        // A base URL that names no endpoint gives Claude Code none, and Codex its vendor's.
        assert!(endpoints(&[("ANTHROPIC_BASE_URL", "nonsense")], Backend::ClaudeCode).is_empty());
        let bad = [("OPENAI_BASE_URL", "nonsense")];
        assert_eq!(endpoints(&bad, Backend::Codex).len(), 3);
        let both =
            [("OPENAI_BASE_URL", "http://127.0.0.1:1"), ("OPENAI_API_BASE", "https://o.example")];
        assert_eq!(endpoints(&both, Backend::Codex), ["127.0.0.1:1", "o.example:443"]);
        // Codex's config.toml, in $CODEX_HOME or ~/.codex.
        std::fs::create_dir_all(home.join(".codex")).unwrap();
        std::fs::write(home.join(".codex/config.toml"), "base_url = \"http://localhost:9\"\n")
            .unwrap();
        assert_eq!(endpoints(&[], Backend::Codex), ["127.0.0.1:9"]);
        let elsewhere = home.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("config.toml"), "base_url = \"http://127.0.0.1:7\"\n")
            .unwrap();
        let codex_home = [("CODEX_HOME", elsewhere.to_str().unwrap())];
        assert_eq!(endpoints(&codex_home, Backend::Codex), ["127.0.0.1:7"]);
        // Gemini CLI: its gateway base URL, else Google's API and login.
        assert_eq!(endpoints(&[], Backend::Gemini)[0], "generativelanguage.googleapis.com:443");
        let gateway = [("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:5/")];
        assert_eq!(endpoints(&gateway, Backend::Gemini), ["127.0.0.1:5"]);
    }

    #[test]
    fn each_backend_gets_its_own_state_writable_and_its_settings_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = canonical(dir.path());
        let config = config_with(&home, &[]);
        let state = |backend| {
            let mut m = Vec::new();
            agent_state(&config, &describe(backend).confinement, &mut m, &mut Vec::new());
            m
        };
        let claude = state(Backend::ClaudeCode);
        assert_eq!(claude[0], Mount::ReadOnly(home.join(".claude")));
        assert_eq!(claude.len(), 1 + CLAUDE_WRITABLE.len());
        assert!(claude.contains(&Mount::Writable(home.join(".claude/projects"))));
        assert!(home.join(".claude/projects").is_dir());
        assert_eq!(
            state(Backend::Codex),
            [
                Mount::Writable(home.join(".codex")),
                Mount::ReadOnly(home.join(".codex/config.toml"))
            ]
        );
        assert!(state(Backend::Simulated).is_empty());
        // Gemini CLI: `~/.gemini` writable (it rewrites its project registry by rename there),
        // what a later run loads or executes read-only; `$GEMINI_CLI_HOME/.gemini` when set.
        let gemini = state(Backend::Gemini);
        assert_eq!(gemini[0], Mount::Writable(home.join(".gemini")));
        for name in ["settings.json", ".env", "trustedFolders.json", "extensions", "GEMINI.md"] {
            assert!(gemini.contains(&Mount::ReadOnly(home.join(".gemini").join(name))), "{name}");
        }
        assert!(home.join(".gemini/commands").is_dir(), "made so that it cannot be created");
        let elsewhere = home.join("g");
        let moved = config_with(&home, &[("GEMINI_CLI_HOME", elsewhere.to_str().unwrap())]);
        let mut m = Vec::new();
        agent_state(&moved, &describe(Backend::Gemini).confinement, &mut m, &mut Vec::new());
        assert_eq!(m[0], Mount::Writable(elsewhere.join(".gemini")));
    }

    #[test]
    fn an_agent_under_nvm_gets_its_interpreter_and_never_the_home_itself() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = canonical(dir.path());
        let config = config_with(&home, &[]);
        let node_bin = home.join(".nvm/versions/node/v20/bin");
        let package = home.join(".nvm/versions/node/v20/lib/node_modules/@x/agent");
        std::fs::create_dir_all(&node_bin).unwrap();
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(node_bin.join("node"), "").unwrap();
        let cli = package.join("cli.js");
        std::fs::write(&cli, format!("#!{}\nrun()\n", node_bin.join("node").display())).unwrap();
        std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
        let in_home = home.join("agent");
        std::fs::write(&in_home, "#!/usr/bin/env -S sh -e\n").unwrap();
        let cwd = home.join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let sandbox = ProjectSandbox::default();
        let mounts = |program: &Path| {
            let place = AgentPlace {
                backend: Backend::Simulated,
                cwd: &cwd,
                session_id: None,
                read_only: true,
                program,
                sandbox: &sandbox,
            };
            plan(&config, "/usr/bin/bwrap".into(), &place).mounts
        };
        let nvm = mounts(&cli);
        assert!(nvm.contains(&Mount::ReadOnly(home.join(".nvm/versions/node/v20/lib"))), "{nvm:?}");
        assert!(nvm.contains(&Mount::ReadOnly(node_bin)), "the interpreter: {nvm:?}");
        let loose = mounts(&in_home);
        assert!(
            !loose.contains(&Mount::ReadOnly(home.clone())),
            "the home is never bound: {loose:?}"
        );
        assert!(loose.contains(&Mount::ReadOnly(in_home.clone())), "the program alone: {loose:?}");
        let sh = nucleic_agents::process::which(Path::new("sh")).unwrap();
        assert_eq!(interpreter_of(&in_home), Some(sh), "`env -S sh -e` runs sh");
        assert_eq!(interpreter_of(&home.join("work")), None, "a folder runs nothing");
    }
}
