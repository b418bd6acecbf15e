//! `codex exec --json` as a non-interactive agent: one prompt (written to stdin, then closed),
//! one turn, no approvals. exec forces the approval policy to `never`, so anything that would
//! need an approval is refused by codex and reported to the model; the sandbox decides what may
//! change.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufReader, PipeReader};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nucleic_protocol::{Decision, ErrorCode, ErrorEvent, EventKind};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use super::exit::{CodexExit, classify_codex};
use super::launch::DEFAULT_PROVIDER_TIMEOUT;
use super::leftovers::Leftovers;
use super::session::read_stderr;
use super::{ControlIn, ExecDecoder};
use crate::agent::{AgentControl, AgentOutput, Capabilities, NativeEvent, host_events};
use crate::error::AgentError;
use crate::process::{
    AgentChild, MAX_LINE_BYTES, ReadLine, SpawnSpec, Spawned, read_line_capped, spawn_group,
    terminate_tree,
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
    pub program: PathBuf,
    pub cwd: PathBuf,
    /// `CODEX_HOME`; inherited when `None`.
    pub codex_home: Option<PathBuf>,
    /// The Nucleic permission mode (see [`EXEC_SANDBOXES`]).
    pub permission_mode: String,
    pub model: Option<String>,
    /// Continue this thread (`codex exec resume <id>`).
    pub resume: Option<String>,
    pub env: Vec<(OsString, OsString)>,
    /// Give up when the run shows no progress (retry notices do not count) for this long after
    /// its prompt, as the app-server adapter does; `None` waits forever.
    pub provider_timeout: Option<Duration>,
}

impl CodexExecOptions {
    /// Defaults for `program` in `cwd`: the `default` mode (a read-only sandbox).
    pub fn new(program: PathBuf, cwd: PathBuf) -> CodexExecOptions {
        CodexExecOptions {
            program,
            cwd,
            codex_home: None,
            permission_mode: "default".into(),
            model: None,
            resume: None,
            env: Vec::new(),
            provider_timeout: Some(DEFAULT_PROVIDER_TIMEOUT),
        }
    }

    /// The sandbox for the permission mode; other modes are refused.
    pub fn sandbox(&self) -> Result<&'static str, AgentError> {
        let mode = self.permission_mode.as_str();
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
        if self.resume.is_some() {
            args.push("resume".into());
        }
        args.extend(["--json".into(), "--skip-git-repo-check".into(), "-c".into()]);
        args.push(format!("sandbox_mode=\"{sandbox}\"").into());
        if let Some(model) = &self.model {
            args.extend(["-m".into(), model.into()]);
        }
        if let Some(id) = &self.resume {
            if id.trim().is_empty() || id.starts_with('-') {
                return Err(AgentError::InvalidInput(format!("bad thread id to resume: {id:?}")));
            }
            args.push(id.into());
        }
        args.push("-".into());
        let mut env: Vec<(OsString, OsString)> = Vec::new();
        if let Some(home) = &self.codex_home {
            env.push(("CODEX_HOME".into(), home.clone().into_os_string()));
        }
        env.extend(self.env.iter().cloned());
        Ok(SpawnSpec { program: self.program.clone(), args, cwd: self.cwd.clone(), env })
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
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    prompted: AtomicBool,
    stop_requested: AtomicBool,
    ended: AtomicBool,
    pid: Option<u32>,
    turn: Mutex<Turn>,
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
    let spec = opts.spawn_spec()?;
    let Spawned { mut child, stdout, stderr } = spawn_group(&spec)?;
    let shared = Arc::new(Shared {
        stdin: tokio::sync::Mutex::new(child.stdin.take()),
        prompted: AtomicBool::new(false),
        stop_requested: AtomicBool::new(false),
        ended: AtomicBool::new(false),
        pid: child.id(),
        turn: Mutex::new(Turn::default()),
    });
    let handle = CodexExecHandle { shared };
    let (tx, rx) = mpsc::channel(1024);
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_task = {
        let (tx, tail) = (tx.clone(), tail.clone());
        tokio::task::spawn_blocking(move || read_stderr(stderr, &tx, &tail))
    };
    let decoder = ExecDecoder::new()
        .with_session_info(opts.cwd.to_string_lossy(), opts.model.clone().unwrap_or_default());
    let stdout_task = {
        let (tx, handle) = (tx.clone(), handle.clone());
        tokio::task::spawn_blocking(move || read_stdout(stdout, decoder, &handle, &tx))
    };
    if let Some(limit) = opts.provider_timeout {
        tokio::spawn(watchdog(handle.clone(), tx.clone(), limit));
    }
    let leftovers = Leftovers::note(&opts.cwd);
    tokio::spawn(supervise(child, handle.clone(), tx, stdout_task, stderr_task, tail, leftovers));
    Ok((handle, rx))
}

/// Stops a run that shows no progress for `limit` after its prompt (exec, too, retries an
/// unreachable provider forever), with a `timeout` error; the run ends as `apiError`.
async fn watchdog(handle: CodexExecHandle, tx: mpsc::Sender<AgentOutput>, limit: Duration) {
    let tick = (limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        if handle.shared.ended.load(Ordering::SeqCst)
            || handle.shared.stop_requested.load(Ordering::SeqCst)
        {
            return;
        }
        let stalled = {
            let turn = handle.turn();
            turn.last.is_none() && turn.progress.is_some_and(|t| t.elapsed() >= limit)
        };
        if stalled {
            let why = format!(
                "codex exec made no progress for {} s (its model provider is unreachable or not answering, and codex retries forever); Nucleic gave up and stopped it",
                limit.as_secs_f32()
            );
            handle.turn().gave_up = Some(why.clone());
            let error = ErrorEvent { code: ErrorCode::Timeout, message: why, http_status: None };
            let events = host_events(vec![EventKind::Error(error)]);
            let _ = tx.send(AgentOutput::Events(events)).await;
            handle.stop(Duration::from_secs(2));
            return;
        }
    }
}

/// Decodes stdout until EOF; returns the decoder (for its unknown-line count).
fn read_stdout(
    stdout: PipeReader,
    mut decoder: ExecDecoder,
    handle: &CodexExecHandle,
    tx: &mpsc::Sender<AgentOutput>,
) -> ExecDecoder {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        let decoded = match read_line_capped(&mut reader, &mut buf, MAX_LINE_BYTES) {
            Ok(ReadLine::Line(line)) if line.trim().is_empty() => continue,
            Ok(ReadLine::Line(line)) => decoder.decode(&line),
            Ok(ReadLine::Oversized { head, .. }) => decoder.decode(&head),
            Ok(ReadLine::Eof) | Err(_) => return decoder,
        };
        {
            let mut turn = handle.turn();
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
        let events = NativeEvent::from_line(&decoded.native_type, decoded.events);
        if tx.blocking_send(AgentOutput::Events(events)).is_err() {
            return decoder;
        }
    }
}

async fn supervise(
    mut child: AgentChild,
    handle: CodexExecHandle,
    tx: mpsc::Sender<AgentOutput>,
    stdout_task: tokio::task::JoinHandle<ExecDecoder>,
    stderr_task: tokio::task::JoinHandle<()>,
    tail: Arc<Mutex<VecDeque<String>>>,
    leftovers: Leftovers,
) {
    let status = child.wait().await;
    handle.shared.ended.store(true, Ordering::SeqCst);
    let drain = Duration::from_secs(2);
    let decoder = tokio::time::timeout(drain, stdout_task).await.ok().and_then(Result::ok);
    let _ = tokio::time::timeout(drain, stderr_task).await;
    leftovers.clean_after_exit().await;
    let (code, signal) = match status {
        Ok(s) => (s.code(), s.signal()),
        Err(_) => (None, None),
    };
    let facts = {
        let turn = handle.turn();
        CodexExit {
            code,
            signal,
            last_turn: turn.last.clone(),
            turn_open: turn.open,
            setup_failed: None,
            stop_requested: handle.shared.stop_requested.load(Ordering::SeqCst),
            gave_up: turn.gave_up.clone(),
            turn_error: turn.error.clone(),
            last_stderr: tail.lock().ok().and_then(|t| t.back().cloned()),
        }
    };
    let mut finished = classify_codex(&facts);
    finished.unknown_lines = decoder.map_or(0, |d| d.unknown_lines());
    let _ = tx.send(AgentOutput::Exited(finished)).await;
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
        let mut stdin = self.shared.stdin.lock().await;
        let mut pipe = stdin.take().ok_or(AgentError::InputClosed)?;
        self.turn().progress = Some(Instant::now());
        pipe.write_all(text.as_bytes()).await.map_err(AgentError::Write)?;
        pipe.shutdown().await.map_err(AgentError::Write)
    }

    async fn respond(&self, request_id: &str, _decision: &Decision) -> Result<(), AgentError> {
        Err(AgentError::UnknownRequest(request_id.to_owned()))
    }

    async fn interrupt(&self) -> Result<(), AgentError> {
        Err(AgentError::Unsupported("interrupting codex exec (stop it instead)"))
    }

    async fn set_model(&self, _model: &str) -> Result<(), AgentError> {
        Err(AgentError::Unsupported("changing the model mid-session (codex exec)"))
    }

    async fn set_permission_mode(&self, _mode: &str) -> Result<(), AgentError> {
        Err(AgentError::Unsupported("changing the permission mode mid-session (codex exec)"))
    }

    async fn close_input(&self) {
        self.shared.stdin.lock().await.take();
    }

    fn stop(&self, grace: Duration) {
        self.shared.stop_requested.store(true, Ordering::SeqCst);
        if let Some(pid) = self.shared.pid {
            terminate_tree(pid, grace);
        }
    }

    fn pid(&self) -> Option<u32> {
        self.shared.pid
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
            ["exec", "--json", "--skip-git-repo-check", "-c", "sandbox_mode=\"read-only\"", "-"]
        );
        o.permission_mode = "acceptEdits".into();
        o.resume = Some("t1".into());
        o.model = Some("gpt-5.5".into());
        assert_eq!(
            args(&o),
            [
                "exec",
                "resume",
                "--json",
                "--skip-git-repo-check",
                "-c",
                "sandbox_mode=\"workspace-write\"",
                "-m",
                "gpt-5.5",
                "t1",
                "-"
            ]
        );
        o.resume = Some("--last".into());
        assert!(o.spawn_spec().is_err());
        o.resume = None;
        o.permission_mode = "dontAsk".into();
        assert!(o.spawn_spec().unwrap_err().to_string().contains("dontAsk"));
    }
}
