//! The backend-neutral face of a running agent: what the session controller can ask of it, what
//! it reports back, and which of those things a backend supports.

use std::future::Future;
use std::time::Duration;

use nucleic_protocol::{Decision, EventKind, RunFinished};

use crate::error::AgentError;
use crate::supervisor::AgentProcess;

/// What a running agent reports to its session controller.
#[derive(Debug)]
pub enum AgentOutput {
    /// Events decoded from one or more native lines, in order.
    Events(Vec<NativeEvent>),
    /// The process is gone; always the last output.
    Exited(RunFinished),
}

/// One decoded event and the type of the native line it came from (`None` when the adapter made
/// it, e.g. for an oversized line).
#[derive(Debug, Clone, PartialEq)]
pub struct NativeEvent {
    pub native_type: Option<String>,
    pub kind: EventKind,
    /// Where in the agent's output it came from, when the supervisor tracks that (see
    /// `nucleic_protocol::Event::origin`); set by the supervisor, never by a decoder.
    pub origin: Option<String>,
}

impl NativeEvent {
    /// Events of one native line.
    pub fn from_line(native_type: &str, kinds: Vec<EventKind>) -> Vec<NativeEvent> {
        kinds
            .into_iter()
            .map(|kind| NativeEvent {
                native_type: Some(native_type.to_owned()),
                kind,
                origin: None,
            })
            .collect()
    }
}

/// What a backend supports (a wire type: clients hide what a backend lacks).
pub use nucleic_protocol::Capabilities;

/// Control of one running agent process. Implementations must be cheap to call from the
/// session's single writer task: they write to the agent's stdin and return.
///
/// A backend run by the supervisor implements [`AgentControl::process`], which gives it
/// `close_input`, `stop` and `pid`; what it lacks (see its [`Capabilities`]) it leaves to the
/// refusing defaults. Any other implementation (a test double) must implement those three itself.
pub trait AgentControl: Send + Sync + 'static {
    /// What this backend can do.
    fn capabilities(&self) -> Capabilities;
    /// Starts a turn (or queues one, if a turn is running) with a person's text.
    fn send_user_text(&self, text: &str) -> impl Future<Output = Result<(), AgentError>> + Send;
    /// Answers a pending approval. Refused for an id the agent is not waiting on.
    fn respond(
        &self,
        request_id: &str,
        decision: &Decision,
    ) -> impl Future<Output = Result<(), AgentError>> + Send;
    /// True when `request_id` is a pre-check: the agent asks the host about a tool call before
    /// its own permission rules (Claude Code's PreToolUse hook). It is answered allow or deny
    /// with [`AgentControl::respond`], or handed to the agent's own prompt with
    /// [`AgentControl::defer`] — never left to a person as such.
    fn is_precheck(&self, _request_id: &str) -> bool {
        false
    }
    /// Answers a pre-check "ask a person": the agent then asks through its permission prompt,
    /// whatever its own rules say.
    fn defer(&self, _request_id: &str) -> impl Future<Output = Result<(), AgentError>> + Send {
        async { Err(AgentError::Unsupported("pre-checks")) }
    }
    /// Interrupts the current turn; the process stays alive.
    fn interrupt(&self) -> impl Future<Output = Result<(), AgentError>> + Send {
        async { Err(AgentError::Unsupported("interrupting a turn")) }
    }
    /// Switches the model for the next requests.
    fn set_model(&self, _model: &str) -> impl Future<Output = Result<(), AgentError>> + Send {
        async { Err(AgentError::Unsupported("changing the model mid-session")) }
    }
    /// Switches the permission mode.
    fn set_permission_mode(
        &self,
        _mode: &str,
    ) -> impl Future<Output = Result<(), AgentError>> + Send {
        async { Err(AgentError::Unsupported("changing the permission mode mid-session")) }
    }
    /// The supervised process behind this handle (`None`: not run by the supervisor).
    fn process(&self) -> Option<&AgentProcess> {
        None
    }
    /// Closes the agent's input: it finishes what it is doing and exits.
    fn close_input(&self) -> impl Future<Output = ()> + Send {
        async {
            if let Some(process) = self.process() {
                process.close_input().await;
            }
        }
    }
    /// Stops the whole process group now (SIGTERM, then SIGKILL after `grace`).
    fn stop(&self, grace: Duration) {
        if let Some(process) = self.process() {
            process.stop(grace);
        }
    }
    /// The agent's pid (also its process group id).
    fn pid(&self) -> Option<u32> {
        self.process().and_then(AgentProcess::pid)
    }
}

/// Helper for adapters: events with no native type.
pub(crate) fn host_events(kinds: Vec<EventKind>) -> Vec<NativeEvent> {
    kinds.into_iter().map(|kind| NativeEvent { native_type: None, kind, origin: None }).collect()
}
