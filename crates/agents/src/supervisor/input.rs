//! The side of a running agent its handle uses: the agent's input (every write under a
//! deadline), its pid, and stopping its whole process tree.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::error::AgentError;
use crate::process::terminate_tree;

/// The agent's input: its stdin pipe, or anything standing in for it.
type Input = Pin<Box<dyn AsyncWrite + Send>>;

/// How long one write to an agent's input may wait for the agent to read it. An agent that
/// stops reading (its pipe full) would otherwise hang the caller — and every writer behind it.
pub const INPUT_DEADLINE: Duration = Duration::from_secs(30);

/// A running agent as its handle sees it. Shared by the handle and the supervisor.
pub struct AgentProcess {
    input: tokio::sync::Mutex<Option<Input>>,
    pid: Option<u32>,
    deadline: Duration,
    stop_requested: AtomicBool,
    /// The process is gone (the watchdog stops looking).
    ended: AtomicBool,
}

impl std::fmt::Debug for AgentProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentProcess")
            .field("pid", &self.pid)
            .field("stop_requested", &self.stop_requested)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl AgentProcess {
    /// An agent whose input is `input` (its stdin pipe, or anything standing in for it) and
    /// whose process tree is led by `pid` (`None`: nothing to signal).
    pub fn new(input: impl AsyncWrite + Send + 'static, pid: Option<u32>) -> AgentProcess {
        AgentProcess {
            input: tokio::sync::Mutex::new(Some(Box::pin(input))),
            pid,
            deadline: INPUT_DEADLINE,
            stop_requested: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        }
    }

    /// The same with another write deadline.
    #[must_use]
    pub fn with_input_deadline(mut self, deadline: Duration) -> AgentProcess {
        self.deadline = deadline;
        self
    }

    /// Writes `line` and a newline, and flushes.
    pub async fn write_line(&self, line: &str) -> Result<(), AgentError> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.write(&bytes, false).await
    }

    /// Writes `bytes` and closes the input (the agent reads to its end).
    pub async fn write_and_close(&self, bytes: &[u8]) -> Result<(), AgentError> {
        self.write(bytes, true).await
    }

    /// Writes under the deadline. A write that times out leaves a torn line behind, so the input
    /// is closed: the agent sees its end instead of garbage.
    async fn write(&self, bytes: &[u8], close: bool) -> Result<(), AgentError> {
        let write = async {
            let mut input = self.input.lock().await;
            let pipe = input.as_mut().ok_or(AgentError::InputClosed)?;
            pipe.write_all(bytes).await.map_err(AgentError::Write)?;
            if close {
                pipe.shutdown().await.map_err(AgentError::Write)?;
                input.take();
                return Ok(());
            }
            pipe.flush().await.map_err(AgentError::Write)
        };
        match tokio::time::timeout(self.deadline, write).await {
            Ok(result) => result,
            Err(_) => {
                // Whoever holds the lock now is waiting on the same full pipe and gives up too.
                if let Ok(mut input) = self.input.try_lock() {
                    input.take();
                }
                Err(AgentError::Timeout {
                    what: format!(
                        "writing {} bytes to the agent's input (it is not reading; input closed)",
                        bytes.len()
                    ),
                    after: self.deadline,
                })
            }
        }
    }

    /// Whether the input is still open (waits at most for the write in progress).
    pub async fn input_open(&self) -> bool {
        match tokio::time::timeout(self.deadline, self.input.lock()).await {
            Ok(input) => input.is_some(),
            Err(_) => false,
        }
    }

    /// Closes the agent's input: it finishes what it is doing and exits. Waits at most for the
    /// write in progress (which has its own deadline).
    pub async fn close_input(&self) {
        let taken = match tokio::time::timeout(self.deadline, self.input.lock()).await {
            Ok(mut input) => input.take(),
            Err(_) => None,
        };
        // Said explicitly (a keeper tells "closed" from "the host went away" by it).
        if let Some(mut pipe) = taken {
            let _ = tokio::time::timeout(self.deadline, pipe.shutdown()).await;
        }
    }

    /// Stops the whole process tree now (SIGTERM, then SIGKILL after `grace`). Must be called
    /// inside a Tokio runtime.
    pub fn stop(&self, grace: Duration) {
        self.stop_requested.store(true, Ordering::SeqCst);
        if let Some(pid) = self.pid {
            terminate_tree(pid, grace);
        }
    }

    /// The agent's pid (also its process group id).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// [`AgentProcess::stop`] was called.
    pub fn stop_requested(&self) -> bool {
        self.stop_requested.load(Ordering::SeqCst)
    }

    /// The process is gone.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    pub(super) fn mark_ended(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }
}
