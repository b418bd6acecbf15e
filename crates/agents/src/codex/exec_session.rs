//! `codex exec --json` as a non-interactive agent: one prompt (written to stdin, then closed),
//! one turn, no approvals. exec forces the approval policy to `never`, so anything that would
//! need an approval is refused by codex and reported to the model; the sandbox decides what may
//! change.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nucleic_protocol::{Decision, EventKind, RunFinished};
use tokio::sync::mpsc;

use super::exit::{CodexExit, classify_codex, give_up};
use super::launch::DEFAULT_PROVIDER_TIMEOUT;
use super::leftovers::Leftovers;
use super::sandbox::CommandSandbox;
use super::{ControlIn, DecodedLine, ExecDecoder};
use crate::agent::{AgentControl, AgentOutput, Capabilities};
use crate::error::AgentError;
use crate::options::{CommonOptions, home_variable};
use crate::process::SpawnSpec;
use crate::supervisor::{
    AgentProcess, ProcessExit, Protocol, Streams, Supervision, launch, supervise,
};

/// What `codex exec` supports: one prompt, resumable, nothing interactive.
pub const CODEX_EXEC_CAPABILITIES: Capabilities = Capabilities {
    interactive_approvals: false,
    edited_tool_input: false,
    allow_always: false,
    deny_and_stop: false,
    interrupt: false,
    set_model: false,
    set_permission_mode: false,
    resume: true,
    fork: false,
    partial_deltas: false,
};

/// Nucleic permission modes → exec's sandbox. Nothing can be asked, so `default` (which asks
/// before every change) becomes `read-only`: what it would have asked about is refused.
pub const EXEC_SANDBOXES: &[(&str, &str)] = &[
    ("default", "read-only"),
    ("plan", "read-only"),
    ("acceptEdits", "workspace-write"),
    ("bypassPermissions", "danger-full-access"),
];

/// Everything needed to run one `codex exec --json` process.
#[derive(Debug, Clone)]
pub struct CodexExecOptions {
    /// The `codex` executable, the workspace, the Nucleic permission mode (see
    /// [`EXEC_SANDBOXES`]), `-m`, the thread to continue (`codex exec resume <id>`), extra
    /// environment, confinement.
    pub common: CommonOptions,
    /// `CODEX_HOME`; inherited when `None`.
    pub codex_home: Option<PathBuf>,
    /// Give up when the run shows no progress (retry notices do not count) for this long after
    /// its prompt, as the app-server adapter does; `None` waits forever.
    pub provider_timeout: Option<Duration>,
}

impl CodexExecOptions {
    /// Defaults for `program` in `cwd`: the `default` mode (a read-only sandbox).
    pub fn new(program: PathBuf, cwd: PathBuf) -> CodexExecOptions {
        CodexExecOptions {
            common: CommonOptions::new(program, cwd),
            codex_home: None,
            provider_timeout: Some(DEFAULT_PROVIDER_TIMEOUT),
        }
    }

    /// Codex's own sandbox for its commands, with Nucleic's profile, when confined.
    pub fn command_sandbox(&self) -> Option<CommandSandbox> {
        let isolation = self.common.isolation.as_ref()?;
        let sandbox = self.sandbox().ok()?;
        let cwd = &self.common.cwd;
        Some(CommandSandbox::plan(
            isolation,
            &self.common.env,
            self.codex_home.as_deref(),
            sandbox,
            cwd,
        ))
    }

    /// The sandbox for the permission mode; other modes are refused.
    pub fn sandbox(&self) -> Result<&'static str, AgentError> {
        let mode = self.common.permission_mode.as_str();
        EXEC_SANDBOXES.iter().find(|(m, _)| *m == mode).map(|(_, s)| *s).ok_or_else(|| {
            let known: Vec<&str> = EXEC_SANDBOXES.iter().map(|(m, _)| *m).collect();
            AgentError::InvalidInput(format!(
                "codex exec has no permission mode {mode:?} (it supports {})",
                known.join(", ")
            ))
        })
    }

    /// `codex exec [resume] --json --skip-git-repo-check -c sandbox_mode=… [-m …] [<id>] -`: the
    /// prompt comes from stdin (`-`); the sandbox goes through `-c`, which `exec resume` takes too.
    pub fn spawn_spec(&self) -> Result<SpawnSpec, AgentError> {
        let sandbox = self.sandbox()?;
        let mut args: Vec<OsString> = vec!["exec".into()];
        if self.common.resume.is_some() {
            args.push("resume".into());
        }
        args.extend(["--json".into(), "--skip-git-repo-check".into()]);
        // Confined, Nucleic's profile replaces the legacy mode (see `CommandSandbox`).
        match &self.common.isolation {
            Some(isolation) => {
                let env = &self.common.env;
                let plan = CommandSandbox::plan(
                    isolation,
                    env,
                    self.codex_home.as_deref(),
                    sandbox,
                    &self.common.cwd,
                );
                args.extend(plan.args());
            }
            None => args.extend(["-c".into(), format!("sandbox_mode=\"{sandbox}\"").into()]),
        }
        args.extend(super::launch::quiet_config_args());
        if let Some(model) = &self.common.model {
            args.extend(["-m".into(), model.into()]);
        }
        if let Some(id) = &self.common.resume {
            if id.trim().is_empty() || id.starts_with('-') {
                return Err(AgentError::InvalidInput(format!("bad thread id to resume: {id:?}")));
            }
            args.push(id.into());
        }
        args.push("-".into());
        let env = home_variable("CODEX_HOME", self.codex_home.as_ref());
        Ok(self.common.spawn_spec(args, env))
    }
}

#[derive(Debug, Default)]
struct Turn {
    open: bool,
    last: Option<String>,
    error: Option<String>,
    /// When a line other than a retry notice last arrived (or the prompt was sent).
    progress: Option<Instant>,
    gave_up: Option<String>,
}

#[derive(Debug)]
struct Shared {
    process: Arc<AgentProcess>,
    prompted: AtomicBool,
    turn: Mutex<Turn>,
    /// Sandbox mount points to remove at exit.
    leftovers: Leftovers,
}

/// A running `codex exec --json`. Cheap to share.
#[derive(Debug, Clone)]
pub struct CodexExecHandle {
    shared: Arc<Shared>,
}

/// Starts `codex exec`; it waits for its prompt on stdin ([`AgentControl::send_user_text`]).
/// The outputs end with exactly one [`AgentOutput::Exited`].
pub fn spawn_codex_exec(
    opts: &CodexExecOptions,
) -> Result<(CodexExecHandle, mpsc::Receiver<AgentOutput>), AgentError> {
    let (process, streams) = launch(&opts.spawn_spec()?)?;
    let supervision = Supervision { watchdog: opts.provider_timeout, ..Supervision::default() };
    Ok(run_codex_exec(opts, process, streams, supervision))
}

/// Supervises a started `codex exec`.
pub(crate) fn run_codex_exec(
    opts: &CodexExecOptions,
    process: Arc<AgentProcess>,
    streams: Streams,
    supervision: Supervision,
) -> (CodexExecHandle, mpsc::Receiver<AgentOutput>) {
    let shared = Shared {
        process: process.clone(),
        prompted: AtomicBool::new(false),
        turn: Mutex::new(Turn::default()),
        leftovers: Leftovers::note(&opts.common.cwd),
    };
    let handle = CodexExecHandle { shared: Arc::new(shared) };
    let decoder = ExecDecoder::new().with_session_info(
        opts.common.cwd.to_string_lossy(),
        opts.common.model.clone().unwrap_or_default(),
    );
    let rx = supervise(process, streams, handle.clone(), decoder, supervision);
    (handle, rx)
}

crate::supervisor::line_decoder!(ExecDecoder, ControlIn);

impl Protocol for CodexExecHandle {
    type Decoder = ExecDecoder;

    /// Follows the one turn: progress, start, end, the error it failed with.
    fn on_line(&self, decoded: &mut DecodedLine) {
        let mut turn = self.turn();
        if decoded.native_type != "error" {
            turn.progress = Some(Instant::now());
        }
        if decoded.native_type == "turn.started" {
            turn.open = true;
        }
        if let Some(ControlIn::TurnEnded { status }) = &decoded.control {
            turn.open = false;
            turn.last = Some(status.clone());
        }
        for event in &decoded.events {
            if let EventKind::TurnCompleted(t) = event
                && t.is_error
            {
                turn.error.clone_from(&t.result);
            }
        }
    }

    /// exec asks nothing: its control traffic is only the turn's end, seen in `on_line`.
    async fn on_control(&self, _control: ControlIn) -> Result<(), AgentError> {
        Ok(())
    }

    /// No progress for `limit` after the prompt (exec, too, retries an unreachable provider
    /// forever); the run then ends as `apiError`.
    fn stalled(&self, limit: Duration) -> Option<String> {
        let mut turn = self.turn();
        let stalled = turn.last.is_none() && turn.progress.is_some_and(|t| t.elapsed() >= limit);
        stalled.then(|| give_up(&mut turn.gave_up, "codex exec", "", limit))
    }

    async fn finish(&self, exit: ProcessExit<ExecDecoder>) -> RunFinished {
        self.shared.leftovers.clean_after_exit().await;
        let turn = self.turn();
        classify_codex(&CodexExit {
            code: exit.end.code,
            signal: exit.end.signal,
            last_turn: turn.last.clone(),
            turn_open: turn.open,
            setup_failed: None,
            stop_requested: exit.stop_requested,
            gave_up: turn.gave_up.clone(),
            turn_error: turn.error.clone(),
            last_stderr: exit.last_stderr,
        })
    }
}

impl CodexExecHandle {
    fn turn(&self) -> std::sync::MutexGuard<'_, Turn> {
        self.shared.turn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl AgentControl for CodexExecHandle {
    fn capabilities(&self) -> Capabilities {
        CODEX_EXEC_CAPABILITIES
    }

    /// Writes the one prompt and closes stdin; exec takes no follow-ups.
    async fn send_user_text(&self, text: &str) -> Result<(), AgentError> {
        if text.trim().is_empty() {
            return Err(AgentError::InvalidInput("empty message".into()));
        }
        if self.shared.prompted.swap(true, Ordering::SeqCst) {
            return Err(AgentError::Unsupported("follow-up prompts to codex exec (one per run)"));
        }
        self.turn().progress = Some(Instant::now());
        self.shared.process.write_and_close(text.as_bytes()).await
    }

    async fn respond(&self, request_id: &str, _decision: &Decision) -> Result<(), AgentError> {
        Err(AgentError::UnknownRequest(request_id.to_owned()))
    }

    async fn interrupt(&self) -> Result<(), AgentError> {
        Err(AgentError::Unsupported("interrupting codex exec (stop it instead)"))
    }

    fn process(&self) -> Option<&AgentProcess> {
        Some(&self.shared.process)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_reads_the_prompt_from_stdin_with_the_mode_sandbox() {
        let mut o = CodexExecOptions::new("codex".into(), "/w".into());
        let args = |o: &CodexExecOptions| -> Vec<String> {
            o.spawn_spec().unwrap().args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
        };
        assert_eq!(
            args(&o),
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "-c",
                "sandbox_mode=\"read-only\"",
                "-c",
                "features.plugins=false",
                "-"
            ]
        );
        o.common.permission_mode = "acceptEdits".into();
        o.common.resume = Some("t1".into());
        o.common.model = Some("gpt-5.5".into());
        assert_eq!(
            args(&o),
            [
                "exec",
                "resume",
                "--json",
                "--skip-git-repo-check",
                "-c",
                "sandbox_mode=\"workspace-write\"",
                "-c",
                "features.plugins=false",
                "-m",
                "gpt-5.5",
                "t1",
                "-"
            ]
        );
        o.common.resume = Some("--last".into());
        assert!(o.spawn_spec().is_err());
        o.common.resume = None;
        o.common.permission_mode = "dontAsk".into();
        assert!(o.spawn_spec().unwrap_err().to_string().contains("dontAsk"));
    }
}
