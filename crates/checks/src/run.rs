//! Running one check: argv (no shell) in its own process group, a scrubbed environment (the
//! basics and an allow-list, never the host's `NUCLEIC_*`), optionally under bubblewrap, a
//! timeout, the output saved to a 0600 log (capped, the rest counted) and handed out in pieces
//! at most every [`OUTPUT_EVERY`], and every process it started killed when it ends — its
//! tree on a timeout or a stop, and afterwards whatever is left in its group or carries its run
//! token (a daemon that double-forked and called `setsid`).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use nucleic_agents::isolation::{Isolation, is_host_variable};
use nucleic_agents::process::{descendants, kill_tree, proc_stat};
use tokio::sync::{mpsc, oneshot, watch};

use crate::parse::{Counts, Tally};

/// Most bytes of a run's output kept in its log; the rest is counted, not kept.
pub const LOG_CAP_BYTES: u64 = 16 << 20;
/// Output is handed out at most this often (batched).
pub const OUTPUT_EVERY: Duration = Duration::from_millis(250);
/// Most bytes of a run's output handed out (streamed as events); the log has more.
pub const STREAM_CAP_BYTES: usize = 1 << 20;
/// Longest line the count parsers look at (the head is kept).
const LINE_CAP: usize = 8 << 10;
/// How long the output may stay open after the command ended and its processes were killed.
const DRAIN_WITHIN: Duration = Duration::from_secs(2);
/// Inherited variables every check gets (when the host has them), besides its allow-list.
pub const BASIC_VARIABLES: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM"];
/// The variable carrying a run's random token: processes that still carry it after the run
/// ended are its leftovers.
pub const RUN_TOKEN_VARIABLE: &str = "CHECK_RUN_TOKEN";

/// One check to run.
#[derive(Debug, Clone)]
pub struct CheckCommand {
    /// Program and arguments; a program without a slash is looked up on `PATH`, one with a
    /// slash is taken relative to `cwd`.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// Names of host variables passed on (besides [`BASIC_VARIABLES`]); `NUCLEIC_*` never are.
    pub env_allow: Vec<String>,
    /// Run under bubblewrap (its own pid namespace, the host's data dir hidden).
    pub isolation: Option<Isolation>,
    pub log_path: PathBuf,
    pub log_cap: u64,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub exit_code: Option<i32>,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    pub duration: Duration,
    pub timed_out: bool,
    pub stopped: bool,
    /// Bytes the command printed (stdout and stderr together).
    pub output_bytes: u64,
    /// Bytes of them kept in the log.
    pub log_bytes: u64,
    pub counts: Option<Counts>,
    /// Processes it left behind that were killed after it ended.
    pub leftovers_killed: usize,
    /// The output stayed open after everything was killed (a process that escaped holds it).
    pub output_left_open: bool,
}

/// Why a check could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("the check has no command")]
    EmptyCommand,
    #[error("{program}: not found (looked on PATH and relative to the worktree)")]
    NotFound { program: String },
    #[error("{program}: not executable")]
    NotExecutable { program: PathBuf },
    #[error("{program}: cannot start: {reason}")]
    Spawn { program: PathBuf, reason: String },
    #[error("the check's log {path}: {source}")]
    Log { path: PathBuf, source: std::io::Error },
    #[error("the worktree {0} does not exist")]
    NoWorktree(PathBuf),
}

/// Runs `command` to its end (or its timeout, or `stop` turning true); `output` gets its output
/// in pieces, at most every [`OUTPUT_EVERY`].
pub async fn run_check(
    command: &CheckCommand,
    mut output: impl FnMut(String) + Send,
    mut stop: watch::Receiver<bool>,
) -> Result<CheckRun, CheckError> {
    if !command.cwd.is_dir() {
        return Err(CheckError::NoWorktree(command.cwd.clone()));
    }
    let program = resolve_program(command)?;
    let log = open_log(&command.log_path)?;
    let token = run_token();
    let (writer, reader) = output_pipe(&program)?;
    let mut cmd = build_command(command, &program, &token, writer)?;
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| spawn_error(&program, &e))?;
    drop(cmd); // the parent's copies of the pipe's write end
    let pid = child.id().unwrap_or(0);
    let guard = TreeGuard { pid, token: token.clone(), armed: true };
    let (chunks, mut pieces) = mpsc::unbounded_channel();
    let (done_tx, done) = oneshot::channel();
    let cap = command.log_cap;
    std::thread::spawn(move || {
        let _ = done_tx.send(read_output(reader, log, cap, &chunks));
    });

    let deadline = tokio::time::sleep(command.timeout);
    tokio::pin!(deadline);
    let mut ticker = tokio::time::interval(OUTPUT_EVERY);
    let mut pending = String::new();
    let (mut timed_out, mut stopped) = (false, false);
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.ok(),
            () = &mut deadline => {
                kill_tree(pid);
                timed_out = true;
                break child.wait().await.ok();
            }
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    kill_tree(pid);
                    stopped = true;
                    break child.wait().await.ok();
                }
            }
            Some(text) = pieces.recv() => pending.push_str(&text),
            _ = ticker.tick() => {
                if !pending.is_empty() {
                    output(std::mem::take(&mut pending));
                }
            }
        }
    };
    let duration = started.elapsed();
    let sweep = token.clone();
    let leftovers_killed =
        tokio::task::spawn_blocking(move || kill_leftovers(pid, &sweep)).await.unwrap_or(0);
    let mut guard = guard;
    guard.armed = false;
    // Drain what is still in the pipe; give up on a pipe something escaped with.
    let drained = tokio::time::timeout(DRAIN_WITHIN, async {
        let mut done = done;
        loop {
            tokio::select! {
                Some(text) = pieces.recv() => pending.push_str(&text),
                result = &mut done => break result.ok(),
            }
        }
    })
    .await;
    while let Ok(text) = pieces.try_recv() {
        pending.push_str(&text);
    }
    if !pending.is_empty() {
        output(pending);
    }
    let (read, output_left_open) = match drained {
        Ok(Some(read)) => (read, false),
        Ok(None) | Err(_) => (OutputRead::default(), true),
    };
    if let Some(e) = read.log_error {
        return Err(CheckError::Log { path: command.log_path.clone(), source: e });
    }
    Ok(CheckRun {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        duration,
        timed_out,
        stopped,
        output_bytes: read.output_bytes,
        log_bytes: read.log_bytes,
        counts: read.tally.counts(),
        leftovers_killed,
        output_left_open,
    })
}

/// The executable `argv[0]` names, checked: found, a file, executable.
fn resolve_program(command: &CheckCommand) -> Result<PathBuf, CheckError> {
    let name = command.argv.first().filter(|n| !n.is_empty()).ok_or(CheckError::EmptyCommand)?;
    let path = if name.contains('/') {
        Some(command.cwd.join(name))
    } else {
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|dir| dir.join(name)).find(|p| p.is_file()))
    };
    let path = path
        .filter(|p| p.exists())
        .ok_or_else(|| CheckError::NotFound { program: name.clone() })?;
    let meta = std::fs::metadata(&path).map_err(|e| spawn_error(&path, &e))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(CheckError::NotExecutable { program: path });
    }
    Ok(path)
}

fn open_log(path: &Path) -> Result<std::fs::File, CheckError> {
    let fail = |source| CheckError::Log { path: path.to_owned(), source };
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(fail)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)
}

use std::os::unix::fs::DirBuilderExt;

/// A random token naming one run (for finding its leftovers).
fn run_token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut bytes = [0u8; 8];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut bytes);
    }
    format!("{}-{nanos:x}-{:016x}", std::process::id(), u64::from_le_bytes(bytes))
}

fn output_pipe(program: &Path) -> Result<(std::io::PipeWriter, std::io::PipeReader), CheckError> {
    let (reader, writer) = std::io::pipe().map_err(|e| spawn_error(program, &e))?;
    Ok((writer, reader))
}

/// The command: argv in `cwd` (under bwrap when isolated), its own process group, stdin from
/// `/dev/null`, stdout and stderr both into `writer`, the environment scrubbed.
fn build_command(
    command: &CheckCommand,
    program: &Path,
    token: &str,
    writer: std::io::PipeWriter,
) -> Result<tokio::process::Command, CheckError> {
    let args: Vec<OsString> = command.argv[1..].iter().map(OsString::from).collect();
    let (exe, args) = match &command.isolation {
        Some(iso) => {
            let ids = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
            (iso.bwrap.clone(), iso.args(program, &args, &command.cwd, ids))
        }
        None => (program.to_owned(), args),
    };
    let stderr = writer.try_clone().map_err(|e| spawn_error(program, &e))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(&args)
        .current_dir(&command.cwd)
        .env_clear()
        .envs(scrubbed_environment(&command.env_allow))
        .env(RUN_TOKEN_VARIABLE, token)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(stderr);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    Ok(cmd)
}

/// The basic variables and the allowed ones the host has, never a `NUCLEIC_*` one.
pub fn scrubbed_environment(allow: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| !is_host_variable(name))
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            BASIC_VARIABLES.contains(&name.as_ref()) || allow.iter().any(|a| *a == name)
        })
        .collect()
}

fn spawn_error(program: &Path, e: &std::io::Error) -> CheckError {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            CheckError::NotExecutable { program: program.to_owned() }
        }
        _ => CheckError::Spawn { program: program.to_owned(), reason: e.to_string() },
    }
}

/// What the output reader found.
#[derive(Debug, Default)]
struct OutputRead {
    tally: Tally,
    output_bytes: u64,
    log_bytes: u64,
    log_error: Option<std::io::Error>,
}

/// Reads the output to EOF: the log gets the first `cap` bytes, the parsers every line (each
/// cut at [`LINE_CAP`]), `chunks` the first [`STREAM_CAP_BYTES`].
fn read_output(
    mut reader: std::io::PipeReader,
    mut log: std::fs::File,
    cap: u64,
    chunks: &mpsc::UnboundedSender<String>,
) -> OutputRead {
    let mut read = OutputRead::default();
    let mut buf = vec![0u8; 64 << 10];
    let mut line: Vec<u8> = Vec::new();
    let mut streamed = 0usize;
    let mut told_stream_cap = false;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        read.output_bytes += n as u64;
        let room = usize::try_from(cap.saturating_sub(read.log_bytes)).unwrap_or(usize::MAX);
        let keep = &chunk[..n.min(room)];
        if !keep.is_empty() && read.log_error.is_none() {
            match log.write_all(keep) {
                Ok(()) => read.log_bytes += keep.len() as u64,
                Err(e) => read.log_error = Some(e),
            }
        }
        for &b in chunk {
            if b == b'\n' {
                read.tally.line(&String::from_utf8_lossy(&line));
                line.clear();
            } else if line.len() < LINE_CAP {
                line.push(b);
            }
        }
        if streamed < STREAM_CAP_BYTES {
            let take = n.min(STREAM_CAP_BYTES - streamed);
            streamed += take;
            let _ = chunks.send(String::from_utf8_lossy(&chunk[..take]).into_owned());
        } else if !told_stream_cap {
            told_stream_cap = true;
            let _ = chunks.send(format!(
                "\n[nucleic: more output than {} MiB; the rest is in the log]\n",
                STREAM_CAP_BYTES >> 20
            ));
        }
    }
    if !line.is_empty() {
        read.tally.line(&String::from_utf8_lossy(&line));
    }
    if read.output_bytes > read.log_bytes && read.log_error.is_none() {
        let note = format!(
            "\n[nucleic: log capped at {} bytes; {} more bytes were printed and not kept]\n",
            read.log_bytes,
            read.output_bytes - read.log_bytes
        );
        let _ = log.write_all(note.as_bytes());
    }
    read
}

/// SIGKILLs what a run left: processes still in its group or carrying its token (looked for
/// twice, for children forked meanwhile). Returns how many there were.
fn kill_leftovers(leader: u32, token: &str) -> usize {
    let needle = format!("{RUN_TOKEN_VARIABLE}={token}");
    let me = std::process::id();
    let mut killed: Vec<u32> = Vec::new();
    for _ in 0..3 {
        let Ok(entries) = std::fs::read_dir("/proc") else { return killed.len() };
        let found: Vec<u32> = entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| *p != me)
            .filter(|p| {
                proc_stat(*p).is_some_and(|s| !s.zombie && (s.pgrp == leader && leader != 0))
                    || carries(*p, &needle)
            })
            .collect();
        if found.is_empty() {
            break;
        }
        for p in found {
            let mut tree = vec![p];
            tree.extend(descendants(p));
            for q in tree {
                if let Ok(raw) = i32::try_from(q) {
                    let _ = nix::sys::signal::kill(Pid::from_raw(raw), Signal::SIGKILL);
                }
                if !killed.contains(&q) {
                    killed.push(q);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    killed.len()
}

/// Whether process `pid`'s environment holds `needle` (`NAME=value`).
fn carries(pid: u32, needle: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
    environ.split(|b| *b == 0).any(|entry| entry == needle.as_bytes())
}

/// Kills the run's tree and leftovers if the run is abandoned (its future dropped).
struct TreeGuard {
    pid: u32,
    token: String,
    armed: bool,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if self.armed && self.pid != 0 {
            kill_tree(self.pid);
            kill_leftovers(self.pid, &self.token);
        }
    }
}

impl std::fmt::Debug for TreeGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeGuard").field("pid", &self.pid).finish()
    }
}
