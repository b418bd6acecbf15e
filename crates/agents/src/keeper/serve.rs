//! The keeper process: starts the agent, spools its stdout and stderr, serves hosts that attach
//! (one connection streams the spool, another carries the agent's input), records the exit, and
//! ends when released, when its directory vanishes, or when no host came for too long.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ChildStdin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::spool::{self, Next, SPOOL_HEADER, tag};
use super::{KEEPER_VERSION, KeeperDir, KeeperError, KeeperHello, KeeperSpec, KeptExit};
use crate::process::{group_command, kill_tree, spawn_error, terminate_tree_blocking};

/// How often the keeper looks after itself (released, directory gone, no host for too long).
const TICK: Duration = Duration::from_millis(200);
/// How long output may lag behind the agent's exit before the rest of its tree is killed.
const DRAIN: Duration = Duration::from_secs(2);
/// Bytes read from the agent's pipes at once (one spool record).
const CHUNK: usize = 64 * 1024;

/// Runs a keeper for the directory `dir` until it ends (see the module docs). Called by
/// `nucleic __keeper <dir>`; detaches from the caller's session first.
pub fn run_keeper(dir: &Path) -> Result<(), KeeperError> {
    // A session of its own: the host's terminal and process group can no longer signal it.
    let _ = nix::unistd::setsid();
    let dir = KeeperDir(dir.to_owned());
    let spec = dir.read_spec()?;
    if spec.version != KEEPER_VERSION {
        return Err(KeeperError::Invalid(format!(
            "spec version {} (this keeper speaks {KEEPER_VERSION})",
            spec.version
        )));
    }
    let spool_path = dir.spool();
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .open(&spool_path)
        .map_err(|e| KeeperError::io(&spool_path, e))?;
    file.write_all(SPOOL_HEADER).map_err(|e| KeeperError::io(&spool_path, e))?;
    let listener = bind(&dir.socket())?;
    let pipe_error = |e| KeeperError::io(Path::new("pipe"), e);
    let (stdout, stdout_writer) = std::io::pipe().map_err(pipe_error)?;
    let (stderr, stderr_writer) = std::io::pipe().map_err(pipe_error)?;
    let (mut command, program) = group_command(&spec.spawn, stdout_writer, stderr_writer)?;
    let mut child = command.spawn().map_err(|e| spawn_error(program, &e))?;
    drop(command);
    let pid = child.id();
    let keeper = Arc::new(Keeper {
        pid,
        start_ticks: crate::process::proc_stat(pid).map_or(0, |s| s.start_ticks),
        reaped: AtomicBool::new(false),
        stdin: Mutex::new(child.stdin.take()),
        spool: Mutex::new(Spool { file, len: SPOOL_HEADER.len() as u64, closed: false }),
        grown: Condvar::new(),
        readers: AtomicUsize::new(0),
        released: AtomicBool::new(false),
        spec,
        dir,
    });
    eprintln!("keeper {}: agent pid {}", keeper.spec.run, keeper.pid);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    for (pipe, stream) in [(stdout, tag::STDOUT), (stderr, tag::STDERR)] {
        let (keeper, done) = (keeper.clone(), done_tx.clone());
        std::thread::spawn(move || {
            keeper.pump(pipe, stream);
            let _ = done.send(());
        });
    }
    drop(done_tx);
    let waiter = keeper.clone();
    std::thread::spawn(move || {
        let status = child.wait();
        waiter.reaped.store(true, Ordering::SeqCst);
        // The pipes end with the agent, unless a process it started holds them open.
        let mut open = 2;
        let deadline = Instant::now() + DRAIN;
        while open > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            match done_rx.recv_timeout(left) {
                Ok(()) => open -= 1,
                Err(_) => break,
            }
        }
        if open > 0 {
            // The agent is reaped: its pid may name another process now, but its process group
            // cannot be reused while a member (one holding the pipes) lives.
            crate::process::signal_group(waiter.pid, nix::sys::signal::Signal::SIGKILL);
            for _ in 0..open {
                let _ = done_rx.recv_timeout(Duration::from_secs(1));
            }
        }
        let exit = match status {
            Ok(s) => KeptExit { code: s.code(), signal: s.signal() },
            Err(_) => KeptExit::default(),
        };
        waiter.close(&exit);
    });
    keeper.serve(listener);
    Ok(())
}

/// Binds the keeper's socket (0600; the directory is 0700 already).
fn bind(path: &Path) -> Result<UnixListener, KeeperError> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path).map_err(|e| KeeperError::io(path, e))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| KeeperError::io(path, e))?;
    Ok(listener)
}

struct Spool {
    file: File,
    /// Bytes in the file.
    len: u64,
    /// The exit is recorded: nothing follows it.
    closed: bool,
}

struct Keeper {
    dir: KeeperDir,
    spec: KeeperSpec,
    pid: u32,
    start_ticks: u64,
    /// The agent was reaped: its pid may be another process's now.
    reaped: AtomicBool,
    stdin: Mutex<Option<ChildStdin>>,
    spool: Mutex<Spool>,
    /// Signalled whenever the spool grows or closes.
    grown: Condvar,
    /// Connections streaming the spool now.
    readers: AtomicUsize,
    released: AtomicBool,
}

impl Keeper {
    /// Copies one of the agent's pipes into the spool until it ends.
    fn pump(&self, mut pipe: impl Read, stream: u8) {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("keeper {}: reading the agent failed: {e}", self.spec.run);
                    return;
                }
            };
            self.append(stream, &buf[..n]);
        }
    }

    /// Appends one record. A failed write (disk full) is retried every second, holding the
    /// agent's output back (its pipe fills and it waits) rather than losing any of it.
    fn append(&self, stream: u8, payload: &[u8]) {
        let record = spool::encode(stream, payload);
        let mut warned = false;
        loop {
            let mut spool = lock(&self.spool);
            if spool.closed {
                return;
            }
            let len = spool.len;
            match spool.file.write_all(&record) {
                Ok(()) => {
                    spool.len += record.len() as u64;
                    self.grown.notify_all();
                    return;
                }
                Err(e) => {
                    let _ = spool.file.set_len(len);
                    if !warned {
                        eprintln!(
                            "keeper {}: cannot write the spool ({e}); the agent's output waits",
                            self.spec.run
                        );
                        warned = true;
                    }
                }
            }
            drop(spool);
            if self.released.load(Ordering::SeqCst) || !self.dir.spec().exists() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Records the exit; nothing is appended after it.
    fn close(&self, exit: &KeptExit) {
        let payload = serde_json::to_vec(exit).unwrap_or_default();
        self.append(tag::EXIT, &payload);
        lock(&self.spool).closed = true;
        self.grown.notify_all();
        eprintln!("keeper {}: agent exited ({exit:?})", self.spec.run);
    }

    fn exited(&self) -> bool {
        lock(&self.spool).closed
    }

    /// Accepts hosts (on a thread of its own, blocking: a host is served at once) and looks
    /// after the keeper until it ends; the process then exits with the accepting thread.
    fn serve(self: &Arc<Self>, listener: UnixListener) {
        let acceptor = self.clone();
        std::thread::spawn(move || {
            loop {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let keeper = acceptor.clone();
                        std::thread::spawn(move || keeper.connection(stream));
                    }
                    Err(e) => {
                        eprintln!("keeper {}: accept failed: {e}", acceptor.spec.run);
                        std::thread::sleep(TICK);
                    }
                }
            }
        });
        let mut alone_since = Instant::now();
        let mut orphan_stopped = false;
        loop {
            if self.released.load(Ordering::SeqCst) {
                if !self.reaped.load(Ordering::SeqCst) {
                    terminate_tree_blocking(self.pid, Duration::from_secs(2));
                }
                let _ = std::fs::remove_dir_all(self.dir.path());
                return;
            }
            if !self.dir.spec().exists() {
                eprintln!("keeper {}: its directory is gone; stopping the agent", self.spec.run);
                if !self.reaped.load(Ordering::SeqCst) {
                    kill_tree(self.pid);
                }
                return;
            }
            if self.readers.load(Ordering::SeqCst) > 0 {
                alone_since = Instant::now();
            } else if self.exited() {
                if alone_since.elapsed() >= self.spec.linger {
                    eprintln!("keeper {}: no host came; the spool stays", self.spec.run);
                    return;
                }
            } else if !orphan_stopped && alone_since.elapsed() >= self.spec.orphan_after {
                eprintln!(
                    "keeper {}: no host for {:?}; stopping the agent",
                    self.spec.run, self.spec.orphan_after
                );
                if let Ok(mut stdin) = self.stdin.try_lock() {
                    stdin.take();
                }
                if !self.reaped.load(Ordering::SeqCst) {
                    terminate_tree_blocking(self.pid, Duration::from_secs(2));
                }
                orphan_stopped = true;
            }
            std::thread::sleep(TICK);
        }
    }

    /// Serves one connection: its first record says what it is for.
    fn connection(&self, mut stream: UnixStream) {
        match spool::read_record(&mut stream) {
            Ok(Next::Record(tag::ATTACH, from)) => {
                let from =
                    from.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes);
                self.readers.fetch_add(1, Ordering::SeqCst);
                self.stream_spool(&mut stream, from);
                self.readers.fetch_sub(1, Ordering::SeqCst);
            }
            Ok(Next::Record(tag::INPUT_LINK, _)) => self.take_input(&mut stream),
            _ => {}
        }
    }

    /// Sends the hello, then the spool from byte `from` on, as it grows, until the exit record
    /// was sent or the host goes away.
    fn stream_spool(&self, out: &mut UnixStream, from: u64) {
        let hello = KeeperHello {
            version: KEEPER_VERSION,
            run: self.spec.run.clone(),
            pid: self.pid,
            start_ticks: self.start_ticks,
            keeper_pid: std::process::id(),
        };
        let hello = serde_json::to_vec(&hello).unwrap_or_default();
        if spool::write_record(out, tag::HELLO, &hello).is_err() {
            return;
        }
        let Ok(file) = File::open(self.dir.spool()) else { return };
        let mut pos = from;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let (len, closed) = {
                let mut spool = lock(&self.spool);
                while spool.len <= pos && !spool.closed {
                    let (s, _) = self
                        .grown
                        .wait_timeout(spool, TICK)
                        .unwrap_or_else(PoisonError::into_inner);
                    spool = s;
                    if self.released.load(Ordering::SeqCst) {
                        return;
                    }
                }
                (spool.len, spool.closed)
            };
            if pos >= len && closed {
                let _ = out.shutdown(std::net::Shutdown::Write);
                return;
            }
            let want = usize::try_from(len - pos).unwrap_or(usize::MAX).min(buf.len());
            let n = match file.read_at(&mut buf[..want], pos) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if out.write_all(&buf[..n]).is_err() {
                return;
            }
            pos += n as u64;
        }
    }

    /// Passes the host's input to the agent until the host closes the connection.
    fn take_input(&self, input: &mut UnixStream) {
        loop {
            match spool::read_record(input) {
                Ok(Next::Record(tag::INPUT, bytes)) => {
                    let mut stdin = lock(&self.stdin);
                    let failed = match stdin.as_mut() {
                        Some(pipe) => pipe.write_all(&bytes).and_then(|()| pipe.flush()).is_err(),
                        None => false,
                    };
                    if failed {
                        stdin.take();
                    }
                }
                Ok(Next::Record(tag::CLOSE_INPUT, _)) => {
                    lock(&self.stdin).take();
                }
                Ok(Next::Record(tag::RELEASE, _)) => {
                    self.released.store(true, Ordering::SeqCst);
                    self.grown.notify_all();
                    return;
                }
                Ok(Next::Record(..)) => {}
                Ok(Next::End | Next::Torn) | Err(_) => return,
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
