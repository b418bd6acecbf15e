//! Starting an agent process for a session: which executable, which flags, which environment,
//! and the isolation that keeps the host's data dir out of its sight.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nucleic_agents::AgentLaunch;
use nucleic_agents::claude::ClaudeOptions;
use nucleic_agents::codex::CodexOptions;
use nucleic_agents::isolation::Isolation;
use nucleic_protocol::Backend;

use crate::config::{AgentIsolation, HostConfig};
use crate::error::HostError;

/// How long the bubblewrap probe may take.
const PROBE_DEADLINE: Duration = Duration::from_secs(10);

/// What a session asks of its agent.
#[derive(Debug, Clone, Default)]
pub struct AgentRequest {
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    /// Resume this backend conversation (and fork it into a new one when `fork`).
    pub resume: Option<String>,
    pub fork: bool,
}

/// The launch options for `backend` in `cwd`.
pub fn agent_options(
    config: &HostConfig,
    backend: Backend,
    cwd: &Path,
    request: &AgentRequest,
) -> Result<AgentLaunch, HostError> {
    let mut opts = match backend {
        Backend::ClaudeCode => {
            let program = config.agents.claude.clone().ok_or_else(|| {
                HostError::Invalid(
                    "claude is not installed (scripts/install-agents.sh); use the simulated backend".into(),
                )
            })?;
            ClaudeOptions::new(program, cwd.to_owned())
        }
        Backend::Simulated => {
            let mut o = ClaudeOptions::new(config.agents.sim_program.clone(), cwd.to_owned());
            o.prefix_args = config.agents.sim_prefix.clone();
            o
        }
        Backend::Codex => return codex_options(config, cwd, request).map(AgentLaunch::Codex),
    };
    opts.backend = backend;
    opts.model = request.model.clone();
    if let Some(mode) = &request.permission_mode {
        opts.permission_mode = mode.clone();
    }
    opts.resume = request.resume.clone();
    opts.fork = request.fork;
    opts.env = config.agent_env.clone();
    opts.isolation = isolation_for(config, cwd)?;
    // Every tool call is put to the host's policy first (the simulated agent has no hooks).
    opts.host_hooks = config.policy && backend == Backend::ClaudeCode;
    Ok(AgentLaunch::Claude(opts))
}

/// `codex app-server` options: the permission mode mapped onto approval policy and sandbox,
/// `thread/resume` for a resume. Codex threads cannot be forked here, so a fork is refused.
fn codex_options(
    config: &HostConfig,
    cwd: &Path,
    request: &AgentRequest,
) -> Result<CodexOptions, HostError> {
    let program = config.agents.codex.clone().ok_or_else(|| {
        HostError::Invalid(
            "codex is not installed (scripts/install-agents.sh); use another backend".into(),
        )
    })?;
    if request.fork {
        return Err(HostError::Invalid("the Codex backend cannot fork a conversation".into()));
    }
    let mut o = CodexOptions::new(program, cwd.to_owned());
    if let Some(mode) = &request.permission_mode {
        o.set_permission_mode(mode).map_err(|e| HostError::Invalid(e.to_string()))?;
    }
    o.model = request.model.clone();
    o.resume = request.resume.clone();
    o.env = config.agent_env.clone();
    o.isolation = isolation_for(config, cwd)?;
    Ok(o)
}

/// The isolation an agent of this host working in `cwd` runs under: `config.home` hidden
/// (and, when `cwd` is inside it, the top directory holding `cwd` bound back in). `None` when
/// the setting is `off`, or `auto` and bubblewrap does not work here.
pub(crate) fn isolation_for(
    config: &HostConfig,
    cwd: &Path,
) -> Result<Option<Isolation>, HostError> {
    let bwrap = match (config.agent_isolation, bubblewrap()) {
        (AgentIsolation::Off, _) | (AgentIsolation::Auto, Err(_)) => return Ok(None),
        (_, Ok(bwrap)) => bwrap.clone(),
        (AgentIsolation::Required, Err(why)) => {
            return Err(HostError::Invalid(format!(
                "agents must run isolated ({}=bwrap) but bubblewrap cannot be used: {why}",
                AgentIsolation::VARIABLE
            )));
        }
    };
    let home = config.home.canonicalize().unwrap_or_else(|_| config.home.clone());
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    let mut expose = Vec::new();
    if let Ok(inside) = cwd.strip_prefix(&home) {
        let Some(top) = inside.components().next() else {
            return Err(HostError::Invalid(format!(
                "an agent cannot work in the host's data dir {}",
                home.display()
            )));
        };
        expose.push(home.join(top));
    }
    Ok(Some(Isolation { bwrap, hide: vec![home], expose }))
}

/// The `bwrap` that hides a directory from a program on this machine, or why there is none:
/// probed once per process (bubblewrap missing, or unable to make namespaces here — a
/// container without user namespaces, a kernel that forbids them).
pub fn bubblewrap() -> &'static Result<PathBuf, String> {
    static PROBE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PROBE.get_or_init(probe_bubblewrap)
}

/// Runs `sh -c 'test ! -e DIR/hidden'` with DIR hidden, exactly as agents are run.
fn probe_bubblewrap() -> Result<PathBuf, String> {
    let bwrap = nucleic_agents::process::which(Path::new("bwrap"))
        .ok_or("bubblewrap is not installed (apt-get install bubblewrap)")?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir()
        .join(format!("nucleic-isolation-probe-{}-{nanos}", std::process::id()));
    let hidden = dir.join("hidden");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&hidden, ""))
        .map_err(|e| format!("cannot prepare the probe in {}: {e}", dir.display()))?;
    let isolation = Isolation { bwrap: bwrap.clone(), hide: vec![dir.clone()], expose: Vec::new() };
    let args = ["-c".into(), "test ! -e \"$1\"".into(), "sh".into(), hidden.into_os_string()];
    let mut command = Command::new(&bwrap);
    command
        .args(isolation.args(Path::new("/bin/sh"), &args, Path::new("/")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let outcome = run_with_deadline(command, PROBE_DEADLINE);
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok((status, _)) if status.success() => Ok(bwrap),
        Ok((status, stderr)) => Err(format!(
            "{} does not work here ({status}){}",
            bwrap.display(),
            stderr.lines().last().map(|l| format!(": {l}")).unwrap_or_default()
        )),
        Err(e) => Err(format!("{}: {e}", bwrap.display())),
    }
}

/// Runs `command` to its end or kills it after `deadline`; returns its status and stderr.
fn run_with_deadline(
    mut command: Command,
    deadline: Duration,
) -> Result<(std::process::ExitStatus, String), String> {
    use std::io::Read;
    let mut child = command.spawn().map_err(|e| format!("cannot run it: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", deadline.as_secs()));
            }
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    Ok((status, stderr))
}

/// Says once, when a host opens, that its agents will not be isolated (or not run at all).
pub(crate) fn report_isolation(config: &HostConfig) {
    if config.agent_isolation == AgentIsolation::Off {
        return;
    }
    let Err(why) = bubblewrap() else { return };
    let (home, variable) = (config.home.display(), AgentIsolation::VARIABLE);
    if config.agent_isolation == AgentIsolation::Required {
        eprintln!("nucleic: agents will be refused: {variable}=bwrap, but {why}");
    } else {
        eprintln!(
            "nucleic: agents run WITHOUT isolation and can read the data dir {home} (token, \
             catalog, transcripts): {why}. Install bubblewrap, or set {variable}=off to run them \
             so knowingly (`nucleic doctor` tells)."
        );
    }
}
