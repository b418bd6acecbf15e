//! Agent processes: spawned in their own process group with piped stdio, read line by line with a
//! length cap, and stopped as a whole group (SIGTERM, then SIGKILL after a grace period).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::process::{Child, Command};

use crate::error::AgentError;

/// Longest stdout line kept whole; longer lines are cut (and flagged) rather than exhausting memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// What to start and where.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// Variables added to (or overriding) the inherited environment.
    pub env: Vec<(OsString, OsString)>,
}

/// Starts `spec` in a new process group (pgid = its pid) with stdin, stdout and stderr piped.
pub fn spawn_group(spec: &SpawnSpec) -> Result<Child, AgentError> {
    if !spec.cwd.is_dir() {
        return Err(AgentError::Spawn {
            program: spec.program.clone(),
            reason: format!("working directory {} does not exist", spec.cwd.display()),
        });
    }
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd.spawn().map_err(|e| AgentError::Spawn {
        program: spec.program.clone(),
        reason: match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".into(),
            std::io::ErrorKind::PermissionDenied => "not executable (permission denied)".into(),
            _ => e.to_string(),
        },
    })
}

/// Sends `signal` to the whole process group `pgid`. A group that is already gone is not an error.
pub fn signal_group(pgid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pgid) {
        // ESRCH (no such group) just means everything already exited.
        let _ = killpg(Pid::from_raw(raw), signal);
    }
}

/// SIGTERM to the group now, SIGKILL after `grace` if anything in it is still alive.
pub fn terminate_group(pgid: u32, grace: Duration) {
    signal_group(pgid, Signal::SIGTERM);
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        signal_group(pgid, Signal::SIGKILL);
    });
}

/// One line read from a pipe.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadLine {
    /// A complete line, without its newline (lossily decoded if it was not UTF-8).
    Line(String),
    /// A line longer than the cap: its first bytes, and how long it really was.
    Oversized { head: String, len: usize },
    /// End of stream.
    Eof,
}

/// Reads the next line of at most `max` bytes; the rest of a longer line is consumed and dropped.
pub async fn read_line_capped<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<ReadLine> {
    buf.clear();
    let mut total = 0usize;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            if total == 0 {
                return Ok(ReadLine::Eof);
            }
            break;
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        total += take;
        reader.consume(if done { take + 1 } else { take });
        if done {
            break;
        }
    }
    let text = String::from_utf8_lossy(buf).into_owned();
    if total > max {
        return Ok(ReadLine::Oversized {
            head: text,
            len: total,
        });
    }
    Ok(ReadLine::Line(text))
}

/// Finds `name` on `PATH` (or returns it as is when it contains a slash).
pub fn which(name: &Path) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return name.is_file().then(|| name.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_split_and_capped() {
        let data = b"short\nthis line is far too long\nlast-without-newline".to_vec();
        let mut reader = tokio::io::BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 10).await.unwrap(),
            ReadLine::Line("short".into())
        );
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 10).await.unwrap(),
            ReadLine::Oversized {
                head: "this line ".into(),
                len: 25
            }
        );
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 100).await.unwrap(),
            ReadLine::Line("last-without-newline".into())
        );
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 10).await.unwrap(),
            ReadLine::Eof
        );
    }
}
