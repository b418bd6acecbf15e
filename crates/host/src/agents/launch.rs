//! Starting an agent process for a session: which executable, which flags, which environment,
//! and the confinement it runs under (`confinement.rs` decides its paths).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nucleic_agents::isolation::Isolation;
use nucleic_agents::{AgentError, AgentLaunch, LaunchRequest, describe};
use nucleic_protocol::Backend;

use crate::config::{AgentIsolation, HostConfig};
use crate::confinement::AgentPlace;
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
    /// The session the agent works for (its egress proxy; `None`: no network).
    pub session_id: Option<String>,
    /// The worktree is read-only to the agent (the `readonly` mode).
    pub read_only: bool,
    /// What the project's agents see beyond the default confinement.
    pub sandbox: nucleic_protocol::ProjectSandbox,
}

/// The launch options for `backend` in `cwd`, built by the backend's description; a backend
/// that is not installed, or what it cannot do (a fork, a mode it cannot map), is refused.
pub fn agent_options(
    config: &HostConfig,
    backend: Backend,
    cwd: &Path,
    request: &AgentRequest,
) -> Result<AgentLaunch, HostError> {
    let description = describe(backend);
    let (program, prefix) = config
        .agents
        .program(backend)
        .ok_or_else(|| HostError::Invalid(description.not_installed()))?;
    let mut launch = LaunchRequest::new(program.to_owned(), cwd.to_owned());
    launch.prefix_args = prefix.to_vec();
    if let Some(mode) = &request.permission_mode {
        launch.common.permission_mode.clone_from(mode);
    }
    launch.common.model.clone_from(&request.model);
    launch.common.resume.clone_from(&request.resume);
    launch.common.env.clone_from(&config.agent_env);
    launch.fork = request.fork;
    launch.policy = config.policy;
    let mut launch = description.launch(launch).map_err(|e| match e {
        AgentError::Refused(why) => HostError::Invalid(why),
        other => HostError::Invalid(other.to_string()),
    })?;
    let isolation = isolation_for(config, backend, cwd, request, &launch.common().program)?;
    launch.common_mut().isolation = isolation;
    Ok(launch)
}

/// The confinement an agent of `backend` working in `cwd` runs under (`confinement::plan`).
/// `None` when the setting is `off`, or `auto`, bubblewrap does not work here and the agent is
/// the simulated one; a real agent is refused then, naming the fix.
pub(crate) fn isolation_for(
    config: &HostConfig,
    backend: Backend,
    cwd: &Path,
    request: &AgentRequest,
    program: &Path,
) -> Result<Option<Isolation>, HostError> {
    let Some(bwrap) = confinement_tool(config, backend)? else { return Ok(None) };
    if !request.read_only
        && let Some(why) = super::settings_folders::settings_links_refused(cwd)
    {
        return Err(HostError::Invalid(why));
    }
    if let Some(id) = &request.session_id {
        // Made before the sandbox is planned, so a file attached later shows inside it.
        crate::sessions::attachments::prepare(config, id).map_err(|e| {
            HostError::Invalid(format!("cannot make session {id}'s attachments folder: {e}"))
        })?;
    }
    let place = AgentPlace {
        backend,
        cwd,
        session_id: request.session_id.as_deref(),
        read_only: request.read_only,
        program,
        sandbox: &request.sandbox,
    };
    planned(config, bwrap, &place).map(Some)
}

/// The confinement of an agent run in place outside the daemon (`nucleic run`): the same as a
/// session's, its network through run `run_id`'s proxy ([`crate::policy::egress::RunEgress`]).
pub fn run_isolation(
    config: &HostConfig,
    backend: Backend,
    cwd: &Path,
    run_id: &str,
    program: &Path,
) -> Result<Option<Isolation>, HostError> {
    let request = AgentRequest { session_id: Some(run_id.to_owned()), ..AgentRequest::default() };
    isolation_for(config, backend, cwd, &request, program)
}

/// The confinement of a host-run check in `worktree`: the agents' view of the machine, the
/// worktree writable, no agent state and no network at all. It runs the agent's code, so it is
/// refused where confinement cannot be built, like a real agent (unless confinement is off).
pub(crate) fn check_isolation(
    config: &HostConfig,
    worktree: &Path,
    sandbox: &nucleic_protocol::ProjectSandbox,
) -> Result<Option<Isolation>, HostError> {
    let Some(bwrap) = confinement_tool(config, Backend::ClaudeCode)? else { return Ok(None) };
    if let Some(why) = super::settings_folders::settings_links_refused(worktree) {
        return Err(HostError::Invalid(why));
    }
    let place = AgentPlace {
        backend: Backend::Simulated,
        cwd: worktree,
        session_id: None,
        read_only: false,
        program: Path::new("/bin/sh"),
        sandbox,
    };
    planned(config, bwrap, &place).map(Some)
}

/// The sandbox of one agent start as every start gets it: [`crate::confinement::plan`], with
/// the read-only files it binds made first where the agent could otherwise create them
/// (`missing_read_only`); refused when one cannot be made.
pub fn planned(
    config: &HostConfig,
    bwrap: PathBuf,
    place: &AgentPlace<'_>,
) -> Result<Isolation, HostError> {
    let iso = crate::confinement::plan(config, bwrap, place);
    super::missing_read_only::make_missing_read_only_files(&iso).map_err(HostError::Invalid)?;
    Ok(iso)
}

/// The `bwrap` to confine with, `None` to run unconfined, or the refusal: a real agent (and
/// a check) never runs unconfined unless the person turned confinement off.
fn confinement_tool(config: &HostConfig, backend: Backend) -> Result<Option<PathBuf>, HostError> {
    choose_confinement(config.agent_isolation, bubblewrap(), backend)
}

/// [`confinement_tool`] for a setting and what the probe found.
fn choose_confinement(
    setting: AgentIsolation,
    probe: &Result<PathBuf, String>,
    backend: Backend,
) -> Result<Option<PathBuf>, HostError> {
    match (setting, probe) {
        (AgentIsolation::Off, _) => Ok(None),
        (_, Ok(bwrap)) => Ok(Some(bwrap.clone())),
        (AgentIsolation::Auto, Err(_)) if describe(backend).confinement.optional => Ok(None),
        (AgentIsolation::Auto | AgentIsolation::Required, Err(why)) => {
            Err(HostError::Invalid(format!(
                "agents run confined (bubblewrap: no secrets, writes only in the worktree, \
                 egress only through the host's proxy) but it cannot be used here: {why}. \
                 Install bubblewrap and allow user namespaces, or run agents unconfined \
                 knowingly with {}=off",
                AgentIsolation::VARIABLE
            )))
        }
    }
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
    let mut isolation = Isolation::new(bwrap.clone());
    isolation.mounts.push(nucleic_agents::isolation::Mount::Hide(dir.clone()));
    let args = ["-c".into(), "test ! -e \"$1\"".into(), "sh".into(), hidden.into_os_string()];
    let ids = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let mut command = Command::new(&bwrap);
    command
        .args(isolation.args(Path::new("/bin/sh"), &args, Path::new("/"), ids))
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

/// Says once, when a host opens, that its agents will not be confined (or not run at all).
pub(crate) fn report_isolation(config: &HostConfig) {
    let variable = AgentIsolation::VARIABLE;
    if config.agent_isolation == AgentIsolation::Off {
        eprintln!(
            "nucleic: agents run UNCONFINED ({variable}=off): they and every command they run \
             can read your secrets, write outside their worktree and reach the network"
        );
        return;
    }
    let Err(why) = bubblewrap() else { return };
    eprintln!(
        "nucleic: Claude Code and Codex sessions will be refused: they run confined, but {why}. \
         Install bubblewrap, or set {variable}=off to run them unconfined knowingly \
         (`nucleic doctor` tells)."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_bubblewrap_a_real_agent_is_refused_naming_the_fix_unless_confinement_is_off() {
        let missing: Result<PathBuf, String> = Err("bubblewrap is not installed".into());
        for backend in [Backend::ClaudeCode, Backend::Codex] {
            for setting in [AgentIsolation::Auto, AgentIsolation::Required] {
                let err = choose_confinement(setting, &missing, backend).unwrap_err().to_string();
                assert!(err.contains("not installed") && err.contains("=off"), "{err}");
            }
            assert_eq!(choose_confinement(AgentIsolation::Off, &missing, backend).unwrap(), None);
        }
        // The simulated agent runs unconfined then (it is said on the session).
        let sim = choose_confinement(AgentIsolation::Auto, &missing, Backend::Simulated);
        assert_eq!(sim.unwrap(), None);
        assert!(
            choose_confinement(AgentIsolation::Required, &missing, Backend::Simulated).is_err()
        );
        let found: Result<PathBuf, String> = Ok("/usr/bin/bwrap".into());
        let chosen = choose_confinement(AgentIsolation::Auto, &found, Backend::Codex).unwrap();
        assert_eq!(chosen, Some(PathBuf::from("/usr/bin/bwrap")));
    }
}
