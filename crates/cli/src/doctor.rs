//! `nucleic doctor`: which tools are present, at which versions, and what that means.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use crate::locate::{
    TESTED_CLAUDE, TESTED_CODEX, find_claude, find_codex, find_gemini, find_opencode, find_qwen,
};

struct Finding {
    name: &'static str,
    required: bool,
    path: Option<std::path::PathBuf>,
    tested: Option<&'static str>,
    install: &'static str,
    /// The npm package an update installs (`None`: not an npm tool).
    package: Option<&'static str>,
    /// Whether the agent CLI has credentials to work with (`None`: not an agent CLI).
    signed_in: Option<Result<String, String>>,
}

/// Whether Claude Code has credentials: a key in the environment or a login's credentials file.
fn claude_signed_in() -> Result<String, String> {
    for key in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"] {
        if std::env::var_os(key).is_some_and(|v| !v.is_empty()) {
            return Ok(format!("{key} is set"));
        }
    }
    let dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".claude")));
    match dir.map(|d| d.join(".credentials.json")) {
        Some(file) if file.is_file() => Ok(format!("logged in ({})", file.display())),
        _ => Err("run `claude` once and log in (/login), or set ANTHROPIC_API_KEY".into()),
    }
}

/// Whether Codex has credentials: a key in the environment, a login's `auth.json`, or a
/// provider of its own in `config.toml` (its key then comes from the variable it names).
fn codex_signed_in() -> Result<String, String> {
    for key in ["OPENAI_API_KEY", "CODEX_API_KEY"] {
        if std::env::var_os(key).is_some_and(|v| !v.is_empty()) {
            return Ok(format!("{key} is set"));
        }
    }
    let Some(home) = codex_home() else { return Err("HOME is not set".into()) };
    if home.join("auth.json").is_file() {
        return Ok(format!("logged in ({})", home.join("auth.json").display()));
    }
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap_or_default();
    if config.lines().any(|l| l.trim_start().starts_with("model_provider")) {
        return Ok(format!("a provider of its own in {}", home.join("config.toml").display()));
    }
    Err("run `codex login`, or set OPENAI_API_KEY".into())
}

/// Whether Gemini CLI has a key or a login: `GEMINI_API_KEY` / `GOOGLE_API_KEY`, or the
/// Google login it keeps in `~/.gemini` (`$GEMINI_CLI_HOME/.gemini`).
fn gemini_signed_in() -> Result<String, String> {
    for key in ["GEMINI_API_KEY", "GOOGLE_API_KEY"] {
        if std::env::var_os(key).is_some_and(|v| !v.is_empty()) {
            return Ok(format!("{key} is set"));
        }
    }
    let home = std::env::var_os("GEMINI_CLI_HOME").or_else(|| std::env::var_os("HOME"));
    let Some(home) = home else { return Err("HOME is not set".into()) };
    let creds = std::path::PathBuf::from(home).join(".gemini/oauth_creds.json");
    if creds.is_file() {
        return Ok(format!("logged in ({})", creds.display()));
    }
    Err("run `gemini` once and log in with Google, or set GEMINI_API_KEY".into())
}

/// Codex's home: `$CODEX_HOME`, else `~/.codex`.
fn codex_home() -> Option<std::path::PathBuf> {
    std::env::var_os("CODEX_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".codex")))
}

/// Why Codex's home is a problem: under the temporary dir, codex makes no `codex-linux-sandbox`
/// helper (a link to itself on its `PATH`: "Refusing to create helper binaries under temporary
/// dir"), and without it its own sandbox — which Nucleic configures for a confined session —
/// cannot read a repository's `AGENTS.md`, so the thread is refused.
fn codex_home_warning() -> Option<String> {
    let home = codex_home()?;
    let temp = [std::env::temp_dir(), std::path::PathBuf::from("/tmp")];
    let under = temp.iter().find(|t| home.starts_with(t))?;
    Some(format!(
        "CODEX_HOME {} is under {}: codex makes no codex-linux-sandbox helper there, so a \
         confined Codex session in a repository with an AGENTS.md is refused; move it (e.g. to \
         ~/.codex)",
        home.display(),
        under.display()
    ))
}

fn version_of(path: &Path) -> Result<String, String> {
    let out = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run it: {e}"))?;
    if !out.status.success() {
        return Err(format!("`--version` failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_owned())
}

/// Prints whether the daemon's agents outlive it (keepers), and how many keepers run now.
fn keepers() {
    use nucleic_host::KeeperSettings;
    let program = std::env::current_exe().unwrap_or_default();
    match KeeperSettings::from_env(program) {
        Err(e) => println!("keepers BROKEN setting: {e}"),
        Ok(None) => println!(
            "keepers off ({}=off): agents stop when the host stops or crashes",
            KeeperSettings::VARIABLE
        ),
        Ok(Some(_)) => {
            let running = std::fs::read_dir("/proc")
                .map(|d| {
                    d.filter_map(Result::ok)
                        .filter(|e| {
                            std::fs::read(e.path().join("cmdline"))
                                .is_ok_and(|c| c.windows(9).any(|w| w == b"__keeper\0"))
                        })
                        .count()
                })
                .unwrap_or(0);
            println!(
                "keepers on — agents outlive the host (SIGHUP hands over); {running} keeper(s) running"
            );
        }
    }
}

/// Prints whether the daemon's agents will run confined by the kernel; false when they would be
/// refused (confinement cannot be built here and was not turned off).
fn isolation() -> bool {
    use nucleic_host::AgentIsolation;
    let home = crate::locate::nucleic_home(std::env::var_os("NUCLEIC_HOME").map(Into::into))
        .map_or_else(|| "the data dir".to_owned(), |h| h.display().to_string());
    let setting = match AgentIsolation::from_env() {
        Ok(setting) => setting,
        Err(e) => {
            println!("confinement BROKEN setting: {e}");
            return false;
        }
    };
    match (setting, nucleic_host::bubblewrap()) {
        (AgentIsolation::Off, _) => {
            println!(
                "confinement OFF ({}=off): agents and their commands run UNCONFINED — they can \
                 read your secrets and {home}, write outside their worktree and reach the network",
                AgentIsolation::VARIABLE
            );
            true
        }
        (_, Ok(bwrap)) => {
            println!(
                "confinement on — {}: home and secrets hidden ({home} too), writes only in the \
                 worktree, egress only through the host's proxy, no privilege",
                bwrap.display()
            );
            let missing = nucleic_agents::claude::command_sandbox_missing_tools();
            if !missing.is_empty() {
                println!(
                    "confinement of Claude Code's commands PARTIAL: its own sandbox needs {}; \
                     until then the commands it runs can read its credentials",
                    nucleic_agents::claude::describe_missing(&missing)
                );
            }
            true
        }
        (_, Err(why)) => {
            println!(
                "confinement MISSING: {why}; Claude Code and Codex sessions will be refused \
                 (install bubblewrap and allow user namespaces, or set {}=off knowingly)",
                AgentIsolation::VARIABLE
            );
            false
        }
    }
}

/// Prints whether the host's git calls can execute only git itself (Landlock).
fn git_confinement() {
    match nucleic_host::git_exec_confinement() {
        nucleic_host::ExecConfinement::Enforced => {
            println!("git confinement on — host git calls can execute only git (Landlock)");
        }
        nucleic_host::ExecConfinement::Unavailable(why) => println!(
            "git confinement NOT active: {why}; executing git settings are still switched off, but drivers an agent names in .git/info/attributes could run"
        ),
    }
}

/// Prints the chat bridge's state (when it ever ran) and the daemon's relay connection (when
/// it runs with `--relay`).
fn relay() {
    let Some(home) = crate::locate::nucleic_home(std::env::var_os("NUCLEIC_HOME").map(Into::into))
    else {
        return;
    };
    if let Some(line) = crate::chat::doctor_line(&home) {
        println!("{line}");
    }
    let Some(status) = nucleic_server::remote::read_relay_status(&home) else { return };
    if !std::path::Path::new(&format!("/proc/{}", status.pid)).exists() {
        return;
    }
    use nucleic_server::remote::RelayState;
    let state = match status.state {
        RelayState::Connected => format!("connected, {} device channel(s) open", status.devices),
        // Trying again after refusals: still unreachable as far as anyone knows.
        RelayState::Connecting if status.attempts > 0 => format!(
            "UNREACHABLE (attempt {} failed, trying again now): {}",
            status.attempts,
            status.last_error.as_deref().unwrap_or("?")
        ),
        RelayState::Connecting => "connecting".to_owned(),
        RelayState::Retrying => format!(
            "UNREACHABLE (attempt {}, next in {:.1} s): {}",
            status.attempts,
            status.retry_in_ms.unwrap_or(0) as f64 / 1000.0,
            status.last_error.as_deref().unwrap_or("?")
        ),
        RelayState::Stopped => "stopped".to_owned(),
    };
    println!("relay   {} — host {} — {state}", status.relay, status.host_id);
}

/// Prints whether the daemon runs as a systemd user service.
fn service() {
    match crate::service::unit_path().and_then(|path| crate::service::status_line(&path)) {
        Ok(line) => println!("{line}"),
        Err(e) => println!("service unknown: {e:#}"),
    }
}

/// Whether the dotted version in a tool's `--version` output (`2.1.4 (Claude Code)`,
/// `codex-cli 0.9.0`) is older than `tested`; `None` when it names no such version.
fn older_than(printed: &str, tested: &str) -> Option<bool> {
    let parse = |text: &str| -> Option<Vec<u64>> {
        let parts: Vec<u64> = text.split('.').map(|p| p.parse().ok()).collect::<Option<_>>()?;
        (parts.len() >= 2).then_some(parts)
    };
    let found = printed.split_whitespace().find_map(parse)?;
    Some(found < parse(tested)?)
}

/// Prints one line per tool and a verdict; exit 1 when something required is missing.
pub fn doctor() -> ExitCode {
    let findings = [
        Finding {
            name: "git",
            required: true,
            path: nucleic_agents::process::which("git".as_ref()),
            tested: None,
            install: "install git (apt-get install git)",
            package: None,
            signed_in: None,
        },
        Finding {
            name: "claude",
            required: false,
            path: find_claude(),
            tested: Some(TESTED_CLAUDE),
            install: "scripts/install-agents.sh (pins @anthropic-ai/claude-code@2.1.332)",
            package: Some("@anthropic-ai/claude-code"),
            signed_in: Some(claude_signed_in()),
        },
        Finding {
            name: "codex",
            required: false,
            path: find_codex(),
            tested: Some(TESTED_CODEX),
            install: "scripts/install-agents.sh (pins @openai/codex@0.171.0)",
            package: Some("@openai/codex"),
            signed_in: Some(codex_signed_in()),
        },
        Finding {
            name: "gemini",
            required: false,
            path: find_gemini(),
            tested: Some(nucleic_agents::acp::TESTED_GEMINI),
            install: "scripts/install-agents.sh (pins @google/gemini-cli@0.61.0)",
            package: Some("@google/gemini-cli"),
            signed_in: Some(gemini_signed_in()),
        },
        Finding {
            name: "opencode",
            required: false,
            path: find_opencode(),
            tested: Some(nucleic_agents::acp::TESTED_OPENCODE),
            install: "scripts/install-agents.sh (pins opencode-ai@1.18.33)",
            package: Some("opencode-ai"),
            // A provider comes from its config (`opencode auth login` or a config file).
            signed_in: None,
        },
        Finding {
            name: "qwen",
            required: false,
            path: find_qwen(),
            tested: Some(nucleic_agents::acp::TESTED_QWEN),
            install: "scripts/install-agents.sh (pins @qwen-code/qwen-code@0.24.4)",
            package: Some("@qwen-code/qwen-code"),
            signed_in: None,
        },
    ];
    let mut missing_required = false;
    // The one next step for each problem, in order.
    let mut steps: Vec<String> = Vec::new();
    for f in &findings {
        match &f.path {
            None => {
                missing_required |= f.required;
                if f.required {
                    steps.push(format!("{}: {}", f.name, f.install));
                }
                let what = if f.required { "MISSING (required)" } else { "missing" };
                println!("{:<7} {what}: {}", f.name, f.install);
            }
            Some(path) => match version_of(path) {
                Ok(version) => {
                    let verdict = match f.tested {
                        // `2.1.332 (Claude Code)`, `codex-cli 0.171.0`
                        Some(t) if version.split_whitespace().any(|w| w == t) => {
                            format!("ok, tested version {t}")
                        }
                        Some(t) => match older_than(&version, t) {
                            Some(true) => {
                                let update = match f.package {
                                    Some(package) => format!("npm install -g {package}@{t}"),
                                    None => f.install.to_owned(),
                                };
                                steps.push(format!(
                                    "{}: update it, it is older than the tested {t} ({update})",
                                    f.name
                                ));
                                format!(
                                    "TOO OLD (Nucleic is tested with {t}): update it ({update})"
                                )
                            }
                            Some(false) => format!(
                                "UNTESTED newer version (Nucleic is tested with {t}; it may work)"
                            ),
                            None => format!("UNTESTED version (Nucleic is tested with {t})"),
                        },
                        None => "ok".into(),
                    };
                    let signed_in = match &f.signed_in {
                        None => String::new(),
                        Some(Ok(how)) => format!("; signed in: {how}"),
                        Some(Err(step)) => {
                            steps.push(format!("{}: {step}", f.name));
                            format!("; NOT signed in: {step}")
                        }
                    };
                    println!("{:<7} {} — {version} — {verdict}{signed_in}", f.name, path.display());
                    if f.name == "codex"
                        && let Some(warning) = codex_home_warning()
                    {
                        println!("{:<7} WARNING: {warning}", f.name);
                    }
                }
                Err(e) => {
                    missing_required |= f.required;
                    println!("{:<7} {} — BROKEN: {e}", f.name, path.display());
                    steps.push(format!("{}: reinstall it ({})", f.name, f.install));
                }
            },
        }
    }
    println!("sim     built in — always available (`nucleic run --agent sim …`, no API key)");
    if !isolation() {
        missing_required = true;
        steps.push(
            "confinement: apt-get install bubblewrap (and allow unprivileged user namespaces)"
                .into(),
        );
    }
    keepers();
    git_confinement();
    relay();
    service();
    let agents = findings.iter().filter(|f| !f.required && f.path.is_some()).count();
    if missing_required {
        println!("verdict: not ready — next:");
        for (n, step) in steps.iter().enumerate() {
            println!("  {}. {step}", n + 1);
        }
        ExitCode::from(1)
    } else if agents == 0 {
        println!(
            "verdict: ready for the simulated agent only — next: install claude or codex              (scripts/install-agents.sh, or npm as their vendors say) and sign in to it as usual"
        );
        ExitCode::SUCCESS
    } else if !steps.is_empty() {
        println!("verdict: ready, but an agent CLI cannot work yet — next:");
        for (n, step) in steps.iter().enumerate() {
            println!("  {}. {step}", n + 1);
        }
        ExitCode::SUCCESS
    } else {
        println!(
            "verdict: ready — next: `nucleic open` (starts the daemon) or `nucleic service install`"
        );
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::older_than;

    #[test]
    fn versions_compare_as_numbers() {
        assert_eq!(older_than("2.1.4 (Claude Code)", "2.1.332"), Some(true));
        assert_eq!(older_than("2.10.0 (Claude Code)", "2.1.332"), Some(false));
        assert_eq!(older_than("codex-cli 0.171.0", "0.171.0"), Some(false));
        assert_eq!(older_than("codex-cli 0.99.1", "0.171.0"), Some(true));
        assert_eq!(older_than("Claude Code (dev build)", "2.1.332"), None);
    }
}
