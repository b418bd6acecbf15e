//! `SessionHandle`: how the rest of the host talks to a session's controller task.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nucleic_protocol::{
    ApprovalRequested, ApprovalResolved, Decision, EventKind, RunFinished, SessionStatus,
};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::batch::EventBatch;
use crate::error::CoreError;
use crate::subscription::Subscription;

/// What a session looks like right now.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionState {
    pub status: SessionStatus,
    pub last_seq: u64,
    pub pending_approvals: usize,
    /// Set once the agent process is gone.
    pub finished: Option<RunFinished>,
    /// The last transcript write failure, if events are being held in memory.
    pub storage_error: Option<String>,
    /// The writer let its transcript go while the session is idle (no file, lock or bus held);
    /// the next event reopens it.
    pub released: bool,
    /// How many times it did.
    pub releases: u64,
}

pub(crate) type Reply<T> = oneshot::Sender<Result<T, CoreError>>;

/// Requests to the controller task.
#[derive(Debug)]
pub(crate) enum Command {
    UserText {
        text: String,
        reply: Reply<()>,
    },
    Decide {
        request_id: String,
        decision: Decision,
        by: String,
        confirmed: bool,
        reply: Reply<ApprovalResolved>,
    },
    Interrupt {
        by: String,
        reply: Reply<()>,
    },
    SetModel {
        model: String,
        reply: Reply<()>,
    },
    SetPermissionMode {
        mode: String,
        reply: Reply<()>,
    },
    CloseInput {
        reply: Reply<()>,
    },
    Record {
        kind: Box<EventKind>,
        reply: Reply<()>,
    },
    AskHost {
        request: Box<ApprovalRequested>,
        deadline: Duration,
        reply: Reply<oneshot::Receiver<ApprovalResolved>>,
    },
    Close {
        reply: Reply<()>,
    },
    Stop {
        grace: Duration,
        reason: Option<String>,
        reply: Reply<()>,
    },
    ReleaseWhenIdle {
        after: Option<Duration>,
        reply: Reply<()>,
    },
}

/// A cheap, cloneable handle on one running session.
#[derive(Debug, Clone)]
pub struct SessionHandle {
    pub(crate) session_id: String,
    pub(crate) commands: mpsc::Sender<Command>,
    /// The writer's current live bus (`None` while it let its transcript go).
    pub(crate) bus: watch::Receiver<Option<broadcast::WeakSender<EventBatch>>>,
    pub(crate) state: watch::Receiver<SessionState>,
    pub(crate) transcript: PathBuf,
    pub(crate) index: nucleic_store::SharedIndex,
}

impl SessionHandle {
    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Where its transcript lives.
    pub fn transcript_path(&self) -> &Path {
        &self.transcript
    }

    /// A snapshot of its state.
    pub fn state(&self) -> SessionState {
        self.state.borrow().clone()
    }

    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, CoreError> {
        let (tx, rx) = oneshot::channel();
        self.commands.send(make(tx)).await.map_err(|_| CoreError::SessionEnded)?;
        rx.await.map_err(|_| CoreError::SessionEnded)?
    }

    /// Sends a person's text to the agent (a new turn, or queued behind the running one).
    pub async fn send_user_text(&self, text: &str) -> Result<(), CoreError> {
        let text = text.to_owned();
        self.ask(|reply| Command::UserText { text, reply }).await
    }

    /// Answers a pending approval. The first answer wins; later ones get
    /// [`CoreError::AlreadyResolved`] naming who answered.
    pub async fn decide(
        &self,
        request_id: &str,
        decision: Decision,
        by: &str,
    ) -> Result<ApprovalResolved, CoreError> {
        self.decide_confirmed(request_id, decision, by, false).await
    }

    /// [`SessionHandle::decide`], saying whether the person confirmed a second time (needed to
    /// allow a critical request).
    pub async fn decide_confirmed(
        &self,
        request_id: &str,
        decision: Decision,
        by: &str,
        confirmed: bool,
    ) -> Result<ApprovalResolved, CoreError> {
        let (request_id, by) = (request_id.to_owned(), by.to_owned());
        self.ask(|reply| Command::Decide { request_id, decision, by, confirmed, reply }).await
    }

    /// Interrupts the current turn.
    pub async fn interrupt(&self, by: &str) -> Result<(), CoreError> {
        let by = by.to_owned();
        self.ask(|reply| Command::Interrupt { by, reply }).await
    }

    /// Changes the model mid-session.
    pub async fn set_model(&self, model: &str) -> Result<(), CoreError> {
        let model = model.to_owned();
        self.ask(|reply| Command::SetModel { model, reply }).await
    }

    /// Changes the permission mode mid-session.
    pub async fn set_permission_mode(&self, mode: &str) -> Result<(), CoreError> {
        let mode = mode.to_owned();
        self.ask(|reply| Command::SetPermissionMode { mode, reply }).await
    }

    /// Closes the agent's input: it finishes queued turns and exits.
    pub async fn close_input(&self) -> Result<(), CoreError> {
        self.ask(|reply| Command::CloseInput { reply }).await
    }

    /// Stops the agent's whole process group now. A `reason` (e.g. a timeout) is recorded as an
    /// `error` event first.
    pub async fn stop(&self, grace: Duration, reason: Option<&str>) -> Result<(), CoreError> {
        let reason = reason.map(str::to_owned);
        self.ask(|reply| Command::Stop { grace, reason, reply }).await
    }

    /// Ends a session whose agent has exited: its writer stops for good (so another can take over
    /// the transcript, e.g. to resume the conversation). Refused while the agent runs.
    pub async fn close(&self) -> Result<(), CoreError> {
        self.ask(|reply| Command::Close { reply }).await
    }

    /// Has the writer let its transcript go (closed, unlocked, its live bus dropped) whenever
    /// the session has been idle — agent alive, waiting for input, nothing pending — for
    /// `after` (never, when `None`); the next event reopens it, transparently to subscribers.
    pub async fn release_when_idle(&self, after: Option<Duration>) -> Result<(), CoreError> {
        self.ask(|reply| Command::ReleaseWhenIdle { after, reply }).await
    }

    /// Appends an event the host made (e.g. a rename or a finished merge) to the transcript.
    pub async fn record(&self, kind: EventKind) -> Result<(), CoreError> {
        self.ask(|reply| Command::Record { kind: Box::new(kind), reply }).await
    }

    /// Asks the host's own question `request` as an approval of the session (no agent tool
    /// call waits on it): recorded as `approvalRequested`, answered by the same decisions and
    /// first-responder-wins as the agent's. Once recorded, returns where its resolution will
    /// come: a person's answer, or `cancelled` by `host:timeout` after `deadline`, or
    /// `cancelled` when the turn or the agent ends first. Refused when the agent is gone.
    pub async fn ask_host(
        &self,
        request: ApprovalRequested,
        deadline: Duration,
    ) -> Result<oneshot::Receiver<ApprovalResolved>, CoreError> {
        let request = Box::new(request);
        self.ask(|reply| Command::AskHost { request, deadline, reply }).await
    }

    /// Every event from `from_seq` on: first what is on disk, then live.
    pub fn subscribe(&self, from_seq: u64) -> Result<Subscription, CoreError> {
        let mut buses = self.bus.clone();
        let live =
            buses.borrow_and_update().as_ref().and_then(|b| b.upgrade()).map(|b| b.subscribe());
        Subscription::start(
            self.transcript.clone(),
            self.index.clone(),
            from_seq,
            live,
            Some(buses),
        )
    }

    /// Whether `other` is a handle of the same writer (not a later one of the same session).
    pub fn is_same(&self, other: &SessionHandle) -> bool {
        self.commands.same_channel(&other.commands)
    }

    /// Waits until the agent process is gone and returns how its run ended.
    pub async fn wait_finished(&self) -> RunFinished {
        let mut state = self.state.clone();
        loop {
            if let Some(f) = state.borrow().finished.clone() {
                return f;
            }
            if state.changed().await.is_err() {
                return state.borrow().finished.clone().unwrap_or(RunFinished::new(
                    nucleic_protocol::RunOutcome::Crashed,
                    Some("the session controller stopped unexpectedly".into()),
                    None,
                ));
            }
        }
    }
}
