//! `nucleic doctor`: which tools are present, at which versions, and what that means.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use crate::locate::{TESTED_CLAUDE, TESTED_CODEX, find_claude, find_codex};

struct Finding {
    name: &'static str,
    required: bool,
    path: Option<std::path::PathBuf>,
    tested: Option<&'static str>,
    install: &'static str,
    note: &'static str,
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

/// Prints the state of the daemon's relay connection, when it runs with `--relay`.
fn relay() {
    let Some(home) = crate::locate::nucleic_home(std::env::var_os("NUCLEIC_HOME").map(Into::into))
    else {
        return;
    };
    let Some(status) = nucleic_server::remote::read_relay_status(&home) else { return };
    if !std::path::Path::new(&format!("/proc/{}", status.pid)).exists() {
        return;
    }
    use nucleic_server::remote::RelayState;
    let state = match status.state {
        RelayState::Connected => format!("connected, {} device channel(s) open", status.devices),
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

/// Prints one line per tool and a verdict; exit 1 when something required is missing.
pub fn doctor() -> ExitCode {
    let findings = [
        Finding {
            name: "git",
            required: true,
            path: nucleic_agents::process::which("git".as_ref()),
            tested: None,
            install: "install git (apt-get install git)",
            note: "",
        },
        Finding {
            name: "claude",
            required: false,
            path: find_claude(),
            tested: Some(TESTED_CLAUDE),
            install: "scripts/install-agents.sh (pins @anthropic-ai/claude-code@2.1.332)",
            note: "",
        },
        Finding {
            name: "codex",
            required: false,
            path: find_codex(),
            tested: Some(TESTED_CODEX),
            install: "scripts/install-agents.sh (pins @openai/codex@0.171.0)",
            note: "",
        },
    ];
    let mut missing_required = false;
    for f in &findings {
        match &f.path {
            None => {
                missing_required |= f.required;
                let what = if f.required { "MISSING (required)" } else { "missing" };
                println!("{:<7} {what}: {}{}", f.name, f.install, f.note);
            }
            Some(path) => match version_of(path) {
                Ok(version) => {
                    let verdict = match f.tested {
                        // `2.1.332 (Claude Code)`, `codex-cli 0.171.0`
                        Some(t) if version.split_whitespace().any(|w| w == t) => {
                            format!("ok, tested version {t}")
                        }
                        Some(t) => format!("UNTESTED version (Nucleic is tested with {t})"),
                        None => "ok".into(),
                    };
                    println!("{:<7} {} — {version} — {verdict}{}", f.name, path.display(), f.note);
                }
                Err(e) => {
                    missing_required |= f.required;
                    println!("{:<7} {} — BROKEN: {e}", f.name, path.display());
                }
            },
        }
    }
    println!("sim     built in — always available (`nucleic run --agent sim …`, no API key)");
    missing_required |= !isolation();
    keepers();
    git_confinement();
    relay();
    if missing_required {
        println!("verdict: not ready — install what is marked MISSING");
        ExitCode::from(1)
    } else {
        println!("verdict: ready");
        ExitCode::SUCCESS
    }
}
