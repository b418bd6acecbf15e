//! The host's side of a keeper: starting one, attaching to it (the spool streamed into the
//! supervisor's readers, the agent's input written through it), reading the spool a dead keeper
//! left, and releasing a keeper once the run's end is recorded.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use tokio::io::AsyncWrite;

use super::spool::{self, Next, tag};
use super::{KeeperDir, KeeperError, KeeperHello, KeeperSpec, KeptExit};
use crate::isolation::is_host_variable;
use crate::process::kill_tree;
use crate::supervisor::{AgentProcess, ProcessEnd, Streams};

/// A host attached to a keeper: the keeper's hello, the agent's input side, and what the
/// supervisor reads (the whole spool from its start, then live output, then the exit).
#[derive(Debug)]
pub struct KeeperAttachment {
    pub hello: KeeperHello,
    pub process: Arc<AgentProcess>,
    pub streams: Streams,
}

/// Creates the keeper's directory (0700; it must not exist), writes its spec and starts
/// `program __keeper <dir>` in a session of its own, its log in the directory. Must be called
/// inside a Tokio runtime (which reaps the keeper when it exits).
pub fn start_keeper(program: &Path, dir: &KeeperDir, spec: &KeeperSpec) -> Result<(), KeeperError> {
    let path = dir.path();
    std::fs::DirBuilder::new().mode(0o700).create(path).map_err(|e| KeeperError::io(path, e))?;
    let text = serde_json::to_vec_pretty(spec)
        .map_err(|e| KeeperError::Invalid(format!("cannot encode the spec: {e}")))?;
    let spec_path = dir.spec();
    write_private(&spec_path, &text)?;
    let log_path = dir.log();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .map_err(|e| KeeperError::io(&log_path, e))?;
    let mut command = tokio::process::Command::new(program);
    for (name, _) in std::env::vars_os().filter(|(name, _)| is_host_variable(name)) {
        command.env_remove(name);
    }
    command
        .arg(crate::entry_points::KEEPER_ENTRY)
        .arg(path)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(false);
    let mut child = command.spawn().map_err(|e| KeeperError::io(program, e))?;
    // Reaped by the runtime while the host lives (a task, not a thread per keeper); after
    // that, by whoever adopts orphans.
    tokio::spawn(async move { child.wait().await });
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), KeeperError> {
    let mut file = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| KeeperError::io(path, e))?;
    file.write_all(bytes).map_err(|e| KeeperError::io(path, e))
}

/// How a host reaches a keeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A keeper just started: wait (up to the deadline) for it to make and listen on its socket.
    Starting,
    /// A keeper a previous host left: a socket nobody listens on means it is gone.
    Existing,
}

/// Connects to the keeper in `dir` (waiting up to `deadline`), asks for its spool from the
/// start, and opens the input link. Must be called inside a Tokio runtime.
pub async fn attach(
    dir: &KeeperDir,
    reach: Reach,
    deadline: Duration,
) -> Result<KeeperAttachment, KeeperError> {
    let socket = dir.socket();
    let connect_deadline = deadline;
    let (output, hello) = tokio::task::spawn_blocking(move || {
        let mut output = connect(&socket, reach, connect_deadline)?;
        spool::write_record(&mut output, tag::ATTACH, &0u64.to_le_bytes())
            .map_err(|e| KeeperError::io(&socket, e))?;
        output.set_read_timeout(Some(connect_deadline)).map_err(|e| KeeperError::io(&socket, e))?;
        let hello = match spool::read_record(&mut output) {
            Ok(Next::Record(tag::HELLO, bytes)) => serde_json::from_slice::<KeeperHello>(&bytes)
                .map_err(|e| KeeperError::Invalid(format!("a malformed hello: {e}")))?,
            Ok(_) => return Err(KeeperError::Invalid("the keeper sent no hello".into())),
            Err(e) if is_timeout(&e) => {
                return Err(KeeperError::Timeout {
                    what: format!("the keeper's hello on {}", socket.display()),
                    after: connect_deadline,
                });
            }
            Err(e) => return Err(KeeperError::io(&socket, e)),
        };
        spool::read_header(&mut output).map_err(|e| KeeperError::io(&socket, e))?;
        output.set_read_timeout(None).map_err(|e| KeeperError::io(&socket, e))?;
        Ok::<_, KeeperError>((output, hello))
    })
    .await
    .map_err(|e| KeeperError::Invalid(format!("attaching failed: {e}")))??;
    if hello.version != super::KEEPER_VERSION {
        return Err(KeeperError::Invalid(format!(
            "the keeper speaks version {} (this host {})",
            hello.version,
            super::KEEPER_VERSION
        )));
    }
    let mut input = tokio::net::UnixStream::connect(dir.socket())
        .await
        .map_err(|e| KeeperError::io(&dir.socket(), e))?;
    tokio::io::AsyncWriteExt::write_all(&mut input, &spool::encode(tag::INPUT_LINK, &[]))
        .await
        .map_err(|e| KeeperError::io(&dir.socket(), e))?;
    let streams = demux(output, hello.pid, hello.start_ticks)?;
    let process = Arc::new(AgentProcess::new(KeeperInput::new(input), Some(hello.pid)));
    Ok(KeeperAttachment { hello, process, streams })
}

/// Connects to `socket`, retrying while a starting keeper has not made it or is not listening
/// yet (between its `bind` and `listen` a connection is refused). An existing keeper's socket
/// that refuses means the keeper is gone: no retry.
fn connect(socket: &Path, reach: Reach, deadline: Duration) -> Result<UnixStream, KeeperError> {
    let start = Instant::now();
    loop {
        match UnixStream::connect(socket) {
            Ok(stream) => return Ok(stream),
            Err(e)
                if reach == Reach::Existing
                    && matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                    ) =>
            {
                return Err(KeeperError::io(socket, e));
            }
            // Short sleeps: a new session's first output waits on this (a keeper binds its
            // socket within milliseconds of starting).
            Err(_) if start.elapsed() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => {
                return Err(KeeperError::Timeout {
                    what: format!("connecting to the keeper at {} ({e})", socket.display()),
                    after: deadline,
                });
            }
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
}

/// Splits the keeper's stream into the agent's stdout and stderr (pipes the supervisor's
/// readers take) and its exit. If the keeper goes away before the exit record, the agent can no
/// longer be heard: its tree is stopped and the exit is unknown. Every end is read or written
/// by a task, not a thread: an idle agent costs the host no thread of its own.
fn demux(output: UnixStream, pid: u32, start_ticks: u64) -> Result<Streams, KeeperError> {
    use tokio::io::AsyncWriteExt;
    use tokio::net::unix::pipe::Sender;
    let pipe_error = |e| KeeperError::io(Path::new("pipe"), e);
    // OS pipes rather than in-memory streams: if this task is dropped unfinished (the runtime
    // shuts down), closing the write ends still gives the readers their end of stream.
    let (stdout, stdout_writer) = std::io::pipe().map_err(pipe_error)?;
    let (stderr, stderr_writer) = std::io::pipe().map_err(pipe_error)?;
    let stdout = crate::supervisor::pipe_reader(stdout).map_err(pipe_error)?;
    let stderr = crate::supervisor::pipe_reader(stderr).map_err(pipe_error)?;
    let mut stdout_writer =
        Sender::from_owned_fd(std::os::fd::OwnedFd::from(stdout_writer)).map_err(pipe_error)?;
    let mut stderr_writer =
        Sender::from_owned_fd(std::os::fd::OwnedFd::from(stderr_writer)).map_err(pipe_error)?;
    let socket_error = |e| KeeperError::io(Path::new("keeper socket"), e);
    output.set_nonblocking(true).map_err(socket_error)?;
    // Unbuffered, as before: two reads a record, and no buffer kept per idle agent.
    let mut output = tokio::net::UnixStream::from_std(output).map_err(socket_error)?;
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let exit = loop {
            match spool::read_record_async(&mut output).await {
                Ok(Next::Record(tag::STDOUT, bytes)) => {
                    let _ = stdout_writer.write_all(&bytes).await;
                }
                Ok(Next::Record(tag::STDERR, bytes)) => {
                    let _ = stderr_writer.write_all(&bytes).await;
                }
                Ok(Next::Record(tag::EXIT, bytes)) => {
                    break serde_json::from_slice::<KeptExit>(&bytes).ok();
                }
                Ok(Next::Record(..)) => {}
                Ok(Next::End | Next::Torn) | Err(_) => break None,
            }
        };
        drop((stdout_writer, stderr_writer));
        let _ = exit_tx.send(exit);
    });
    let exit = async move {
        match exit_rx.await {
            Ok(Some(exit)) => ProcessEnd { code: exit.code, signal: exit.signal },
            _ => {
                // Only the agent the keeper named, not a later process with its pid.
                if crate::process::is_running(pid, start_ticks) {
                    kill_tree(pid);
                }
                ProcessEnd::default()
            }
        }
    };
    Ok(Streams::new(stdout, stderr, exit))
}

/// What a keeper that is gone left in its spool: the agent's stdout, its stderr, and its exit
/// if it was recorded. A torn last record (the keeper died writing it) is dropped.
pub fn read_spool(dir: &KeeperDir) -> Result<Streams, KeeperError> {
    let path = dir.spool();
    let mut file = std::fs::File::open(&path).map_err(|e| KeeperError::io(&path, e))?;
    spool::read_header(&mut file).map_err(|e| KeeperError::io(&path, e))?;
    let (mut stdout, mut stderr, mut exit) = (Vec::new(), Vec::new(), None);
    loop {
        match spool::read_record(&mut file).map_err(|e| KeeperError::io(&path, e))? {
            Next::Record(tag::STDOUT, bytes) => stdout.extend_from_slice(&bytes),
            Next::Record(tag::STDERR, bytes) => stderr.extend_from_slice(&bytes),
            Next::Record(tag::EXIT, bytes) => {
                exit = serde_json::from_slice::<KeptExit>(&bytes).ok()
            }
            Next::Record(..) => {}
            Next::End | Next::Torn => break,
        }
    }
    let end = exit.map(|e| ProcessEnd { code: e.code, signal: e.signal }).unwrap_or_default();
    Ok(Streams::new(std::io::Cursor::new(stdout), std::io::Cursor::new(stderr), async move { end }))
}

/// Tells the keeper in `dir` that its run's end is recorded: it removes its directory and
/// exits. A keeper that is gone has its directory removed here.
pub fn release(dir: &KeeperDir, deadline: Duration) -> Result<(), KeeperError> {
    match UnixStream::connect(dir.socket()) {
        Ok(mut link) => {
            link.set_write_timeout(Some(deadline)).map_err(|e| KeeperError::io(dir.path(), e))?;
            let mut bytes = spool::encode(tag::INPUT_LINK, &[]);
            bytes.extend(spool::encode(tag::RELEASE, &[]));
            link.write_all(&bytes).map_err(|e| KeeperError::io(dir.path(), e))?;
            // The keeper closes the link once it took the release.
            link.set_read_timeout(Some(deadline)).map_err(|e| KeeperError::io(dir.path(), e))?;
            let _ = link.read(&mut [0u8; 1]);
            Ok(())
        }
        Err(_) => std::fs::remove_dir_all(dir.path()).or_else(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(KeeperError::io(dir.path(), e))
            }
        }),
    }
}

/// The agent's input through the keeper: every write goes as one input record.
struct KeeperInput {
    stream: tokio::net::UnixStream,
    /// The record being sent and how much of it is out.
    pending: Vec<u8>,
    sent: usize,
    /// The caller's bytes the pending record carries.
    carried: usize,
    closing: bool,
}

impl KeeperInput {
    fn new(stream: tokio::net::UnixStream) -> KeeperInput {
        KeeperInput { stream, pending: Vec::new(), sent: 0, carried: 0, closing: false }
    }

    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.stream).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.pending.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for KeeperInput {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.pending.is_empty() {
            // `write_all` offers the same bytes again after `Pending`: the record is made once.
            this.pending = spool::encode(tag::INPUT, buf);
            this.carried = buf.len();
        }
        ready!(this.poll_drain(cx))?;
        Poll::Ready(Ok(this.carried))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        if !this.closing {
            this.closing = true;
            this.pending = spool::encode(tag::CLOSE_INPUT, &[]);
            ready!(this.poll_drain(cx))?;
        }
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}
