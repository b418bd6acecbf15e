//! The Telegram bridge over `nucleic-client`: a poller task long-polls `getUpdates` from the
//! persisted offset and hands each batch over, waiting until it is recorded before confirming
//! it; the main loop dedupes updates by id (the outbox's inbound record), runs paired users'
//! `/cc` commands as host requests (`exec`) and turns the host's events into reports (`report`);
//! a sender task drains the outbox. A `409` (another poller) or `401` (a revoked token) stops
//! the bridge with a clear status, never a busy loop; every wait has a deadline.

use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nucleic_client::{Client, ClientError};
use nucleic_protocol::{Backend, ChatBridgeState, Event, HostMessage, Verbosity};
use thiserror::Error;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::outbox::{Outbox, OutboxError};
use crate::pairing::{Pairing, PairingError};
use crate::state::{State, StateError};
use crate::telegram;
use crate::transport::{Button, Inbound, PollFailure, Polled as Batch, Transport};

/// How the bridge runs.
#[derive(Debug, Clone)]
pub struct BridgeConfig {
    /// `chat.db`.
    pub store: PathBuf,
    /// Where the bridge writes its state for `doctor` and people (`status.json`).
    pub status_file: PathBuf,
    /// The chat service (`telegram::Telegram`, `matrix::Matrix`), one account.
    pub transport: Arc<dyn Transport>,
    /// The agent new sessions run (the project's default when `None`).
    pub agent: Option<Backend>,
    /// How long one long poll (`getUpdates`, `/sync`) waits for an update.
    pub poll_wait: Duration,
}

/// Why the bridge stopped.
#[derive(Debug, Error)]
pub enum BridgeError {
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Pairing(#[from] PairingError),
    #[error("the host: {0}")]
    Client(#[from] ClientError),
    /// Another process polls this account (the transport's sentence says which service).
    #[error("stopped: {0}")]
    Conflict(String),
    /// The service refused the credentials (the transport's sentence says what to do).
    #[error("stopped: {0}")]
    Unauthorized(String),
    #[error("stopped: {0}")]
    Gone(String),
}

/// What the poller hands over.
#[derive(Debug)]
enum Polled {
    /// Updates, and where to say they are recorded (the poller confirms them to the service
    /// only then, with its next cursor).
    Batch(Batch, oneshot::Sender<()>),
    Stop(BridgeError),
}

/// The first wait after a failed poll; doubled up to [`POLL_BACKOFF_MAX`].
const POLL_BACKOFF: Duration = Duration::from_secs(1);
const POLL_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The longest the sender sleeps between looks at the outbox.
const SENDER_TICK: Duration = Duration::from_secs(1);
/// How long the events task waits before trying again a host that did not come back.
const HOST_RETRY: Duration = Duration::from_secs(1);
/// How long the events task waits for the host before looking for new sessions to follow.
const EVENTS_TICK: Duration = Duration::from_millis(300);

/// The wall clock in unix milliseconds (what the store records times in).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Counts of one bridge's life, for the status file and the tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BridgeStats {
    pub updates: u64,
    pub duplicates: u64,
    pub commands: u64,
    pub strangers: u64,
    pub reports: u64,
    /// Updates that could not be read, and invites that could not be joined.
    pub errors: u64,
}

/// The bridge's main loop state: what `exec` and `report` work with.
#[derive(Debug)]
pub(crate) struct Bridge {
    pub(crate) config: BridgeConfig,
    pub(crate) outbox: Outbox,
    pub(crate) state: State,
    pub(crate) pairing: Pairing,
    /// The bridge's own connection; while a paired user's command runs, theirs (`acting`).
    pub(crate) client: Client,
    pub(crate) acting: crate::acting::ActingClients,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) follow: mpsc::UnboundedSender<(String, u64)>,
    pub(crate) wake: Arc<Notify>,
    pub(crate) stats: BridgeStats,
    /// Requests this bridge answered itself (their resolution needs no notice).
    pub(crate) answered_here: HashSet<String>,
    cursor_key: String,
    /// A pairing changed (or the host refused a user): report to the host now.
    report_due: bool,
}

/// Runs the bridge until `shutdown` completes (Ok) or it must stop (the error says why).
/// `requests` carries the commands; `events` follows the sessions the chats started.
pub async fn run(
    config: BridgeConfig,
    requests: Client,
    events: Client,
    shutdown: impl Future<Output = ()>,
) -> Result<BridgeStats, BridgeError> {
    let transport = config.transport.clone();
    let outbox = Outbox::open(&config.store)?;
    let state = State::open(&config.store)?;
    let pairing = Pairing::open(&config.store)?;
    let cursor_key = transport.account();
    let cursor = outbox.cursor(&cursor_key)?;
    let wake = Arc::new(Notify::new());
    let (poll_tx, mut poll_rx) = mpsc::channel(1);
    let (follow_tx, follow_rx) = mpsc::unbounded_channel();
    let (event_tx, mut event_rx) = mpsc::channel(256);
    for (session, _chat, next) in state.followed()? {
        let _ = follow_tx.send((session, next));
    }
    let poller = tokio::spawn(poll(transport.clone(), cursor, config.poll_wait, poll_tx));
    let sender =
        tokio::spawn(send_loop(transport.clone(), Outbox::open(&config.store)?, wake.clone()));
    let follower = tokio::spawn(follow_events(events, follow_rx, event_tx));
    let mut bridge = Bridge {
        config,
        outbox,
        state,
        pairing,
        client: requests,
        acting: Default::default(),
        transport,
        follow: follow_tx,
        wake,
        stats: BridgeStats::default(),
        answered_here: HashSet::new(),
        cursor_key,
        report_due: false,
    };
    bridge.write_status("running", None);
    bridge.report_to_host(ChatBridgeState::Running, None).await?;
    let mut report_tick = tokio::time::interval(crate::reporting::REPORT_EVERY);
    report_tick.reset();
    tokio::pin!(shutdown);
    let result = loop {
        tokio::select! {
            () = &mut shutdown => break Ok(bridge.stats),
            polled = poll_rx.recv() => match polled {
                Some(Polled::Batch(updates, ack)) => {
                    if let Err(e) = bridge.handle_batch(updates).await {
                        break Err(e);
                    }
                    let _ = ack.send(());
                }
                Some(Polled::Stop(e)) => break Err(e),
                None => break Err(BridgeError::Gone("the poller ended".into())),
            },
            _ = report_tick.tick() => {
                if let Err(e) = bridge.report_to_host(ChatBridgeState::Running, None).await {
                    break Err(e);
                }
            }
            event = event_rx.recv() => match event {
                Some(Ok(event)) => {
                    if let Err(e) = bridge.on_event(&event) {
                        break Err(e);
                    }
                }
                Some(Err(e)) => break Err(BridgeError::Client(e)),
                None => break Err(BridgeError::Gone("the host's event stream ended".into())),
            },
        }
    };
    poller.abort();
    sender.abort();
    follower.abort();
    match &result {
        Ok(_) => bridge.write_status("stopped", None),
        Err(e) => {
            bridge.write_status("failed", Some(&e.to_string()));
            // The person sees why in the cockpit too (a revoked bot token, another poller).
            let state = match e {
                BridgeError::Unauthorized(_) => ChatBridgeState::Refused,
                _ => ChatBridgeState::Retrying,
            };
            let why = e.to_string();
            let told = bridge.report_to_host(state, Some(&why));
            let _ = tokio::time::timeout(Duration::from_secs(5), told).await;
        }
    }
    result
}

impl Bridge {
    /// Records each update before acting on it (a redelivery is not acted on again), acts,
    /// then persists the cursor past the batch.
    async fn handle_batch(&mut self, batch: Batch) -> Result<(), BridgeError> {
        for update in batch.updates {
            self.stats.updates += 1;
            let id = update.id().to_owned();
            if !self.outbox.receive(&self.cursor_key, &id, now_ms())? {
                self.stats.duplicates += 1;
                continue;
            }
            self.handle(update).await?;
            self.outbox.handled(&self.cursor_key, &id, now_ms())?;
            // Before the next update: a user who just paired may command at once.
            if std::mem::take(&mut self.report_due) {
                self.report_to_host(ChatBridgeState::Running, None).await?;
            }
        }
        if let Some(next) = batch.next {
            self.outbox.set_cursor(&self.cursor_key, &next)?;
        }
        Ok(())
    }

    async fn handle(&mut self, update: Inbound) -> Result<(), BridgeError> {
        match update {
            Inbound::Message { chat, user, text, file: Some(file), .. } => {
                if !self.pairing.is_paired(&user)? {
                    self.stranger(&user)?;
                    return Ok(());
                }
                self.stats.commands += 1;
                let Some(own) = self.enter_or_say(&chat, &user).await? else { return Ok(()) };
                let received = self.receive_file(&chat, &file).await;
                self.leave(&user, own);
                received?;
                match text {
                    Some(text) => self.on_message(&chat, &user, &text).await,
                    None => Ok(()),
                }
            }
            Inbound::Message { chat, user, text: Some(text), file: None, .. } => {
                self.on_message(&chat, &user, &text).await
            }
            Inbound::Choice { answer, user, chat, data, .. } => {
                if !self.pairing.is_paired(&user)? {
                    self.stranger(&user)?;
                    return Ok(());
                }
                let Some(chat) = chat else { return Ok(()) };
                self.stats.commands += 1;
                let Some(own) = self.enter_or_say(&chat, &user).await? else {
                    self.transport.answer_choice(&answer, "The host is not reachable").await;
                    return Ok(());
                };
                let notice = self.on_button(&chat, &user, &data).await;
                self.leave(&user, own);
                self.transport.answer_choice(&answer, &notice?).await;
                Ok(())
            }
            Inbound::Invite { chat, user, .. } => {
                // Joined for a paired user, or while a pairing code is open (so a new user can
                // send `/cc pair <code>`); a stranger's invite otherwise stays unanswered.
                if !self.pairing.is_paired(&user)? && !self.pairing.code_open(now_ms())? {
                    self.stranger(&user)?;
                    return Ok(());
                }
                if let Err(why) = self.transport.join(&chat).await {
                    self.stats.errors += 1;
                    self.write_status("running", Some(&format!("could not join {chat}: {why}")));
                }
                Ok(())
            }
            Inbound::Malformed { id, why } => {
                // Recorded (so never retried as if new) and said in the status; nothing acted on.
                self.stats.errors += 1;
                self.write_status(
                    "running",
                    Some(&format!("ignored a malformed update {id}: {why}")),
                );
                Ok(())
            }
            Inbound::Message { text: None, file: None, .. } | Inbound::Other { .. } => Ok(()),
        }
    }

    async fn on_message(&mut self, chat: &str, user: &str, text: &str) -> Result<(), BridgeError> {
        let command = match crate::command::parse(text) {
            Ok(command) => command,
            Err(crate::CommandError::NotCommand) => {
                if !self.pairing.is_paired(user)? {
                    self.stranger(user)?;
                }
                return Ok(());
            }
            Err(e) => {
                if self.pairing.is_paired(user)? {
                    self.say(chat, &e.to_string(), &[])?;
                } else {
                    self.stranger(user)?;
                }
                return Ok(());
            }
        };
        if let crate::Command::Pair(code) = &command {
            return self.pair(chat, user, code);
        }
        if !self.pairing.is_paired(user)? {
            // Ignored: not a word back, so a stranger learns nothing, not even that we listen.
            self.stranger(user)?;
            return Ok(());
        }
        self.stats.commands += 1;
        let Some(own) = self.enter_or_say(chat, user).await? else { return Ok(()) };
        let reply = self.execute(chat, user, command).await;
        self.leave(user, own);
        let reply = reply?;
        self.say(chat, &reply.text, &reply.buttons)
    }

    /// [`Bridge::enter`] for `user`; when their connection cannot be opened, says so in
    /// `chat` and gives `None` (the command is not run).
    async fn enter_or_say(
        &mut self,
        chat: &str,
        user: &str,
    ) -> Result<Option<Client>, BridgeError> {
        match self.enter(user).await {
            Ok(own) => Ok(Some(own)),
            Err(e) => {
                // The host refusing a user (unpaired from the cockpit): the next report syncs.
                self.report_due |= matches!(e, ClientError::Refused(_));
                self.say(chat, &crate::exec::host_failure(&e), &[])?;
                Ok(None)
            }
        }
    }

    fn pair(&mut self, chat: &str, user: &str, code: &str) -> Result<(), BridgeError> {
        use crate::pairing::PairOutcome;
        let text = match self.pairing.attempt(user, chat, code, now_ms())? {
            PairOutcome::Paired => {
                self.report_due = true;
                "Paired: this chat account may now run /cc commands on this host. /cc help lists them.".to_owned()
            }
            PairOutcome::AlreadyPaired => "Already paired.".to_owned(),
            PairOutcome::Wrong { left } => {
                format!("That code is not valid (or expired). {left} tries left.")
            }
            // Locked and limited users are not answered: no reply to feed a guessing loop.
            PairOutcome::Locked | PairOutcome::Limited => {
                self.stranger(user)?;
                return Ok(());
            }
        };
        self.say(chat, &text, &[])
    }

    fn stranger(&mut self, user: &str) -> Result<(), BridgeError> {
        self.stats.strangers += 1;
        self.pairing.count_stranger(user, 1, now_ms())?;
        Ok(())
    }

    /// Queues `text` (split at the service's limit) for `chat`, the choices on its last part.
    pub(crate) fn say(
        &mut self,
        chat: &str,
        text: &str,
        buttons: &[Vec<Button>],
    ) -> Result<(), BridgeError> {
        let (limit, measure) = self.transport.message_limit();
        let parts = crate::split::split(text, limit, measure);
        let count = parts.len();
        for (i, part) in parts.iter().enumerate() {
            let buttons = if i + 1 == count { buttons } else { &[] };
            let body = crate::transport::outbox_body(part, buttons);
            self.outbox.enqueue(self.transport.name(), chat, &body, now_ms())?;
        }
        self.wake.notify_one();
        Ok(())
    }

    pub(crate) fn write_status(&self, state: &str, reason: Option<&str>) {
        let status = serde_json::json!({
            "state": state,
            "reason": reason,
            "at": now_ms(),
            "pid": std::process::id(),
            "updates": self.stats.updates,
            "duplicates": self.stats.duplicates,
            "commands": self.stats.commands,
            "strangers": self.stats.strangers,
            "reports": self.stats.reports,
            "errors": self.stats.errors,
        });
        let _ = std::fs::write(&self.config.status_file, format!("{status}\n"));
    }
}

/// Long-polls from `cursor`, handing each batch over and moving the cursor (which confirms it
/// to the service) only once it is recorded. Transient failures back off; a conflict and
/// refused credentials stop it.
async fn poll(
    transport: Arc<dyn Transport>,
    mut cursor: Option<String>,
    wait: Duration,
    tx: mpsc::Sender<Polled>,
) {
    let mut backoff = POLL_BACKOFF;
    loop {
        match transport.poll(cursor.clone(), wait).await {
            Ok(batch) => {
                backoff = POLL_BACKOFF;
                if batch.updates.is_empty() && batch.next == cursor {
                    continue;
                }
                let next = batch.next.clone();
                let (ack, recorded) = oneshot::channel();
                if tx.send(Polled::Batch(batch, ack)).await.is_err() || recorded.await.is_err() {
                    return;
                }
                cursor = next;
            }
            Err(PollFailure::Conflict(why)) => {
                let _ = tx.send(Polled::Stop(BridgeError::Conflict(why))).await;
                return;
            }
            Err(PollFailure::Unauthorized(why)) => {
                let _ = tx.send(Polled::Stop(BridgeError::Unauthorized(why))).await;
                return;
            }
            Err(PollFailure::Transient { retry_after: Some(after), error }) => {
                eprintln!("nucleic chat: polling failed: {error}; again in {after:?}");
                tokio::time::sleep(after).await;
            }
            Err(PollFailure::Transient { retry_after: None, error }) => {
                eprintln!("nucleic chat: polling failed: {error}; again in {backoff:?}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(POLL_BACKOFF_MAX);
            }
        }
    }
}

/// Sends the outbox's due messages, then sleeps until the next is due, something is queued,
/// or [`SENDER_TICK`].
async fn send_loop(transport: Arc<dyn Transport>, outbox: Outbox, wake: Arc<Notify>) {
    let name = transport.name();
    loop {
        // The store is not `Sync`, so no borrow of it crosses an await.
        let mut round = telegram::Round::default();
        for queued in outbox.due(name, now_ms()).unwrap_or_default() {
            let attempt = transport.send(&queued).await;
            round.count(&attempt);
            if outbox.record(queued.id, &attempt, now_ms()).is_err() {
                break;
            }
            // A file's spooled copy lives until its message is sent or given up.
            if !matches!(attempt, crate::outbox::Attempt::Retry { .. })
                && let Some(file) = crate::transport::read_file_ref(&queued.body)
            {
                let _ = std::fs::remove_file(&file.spool);
            }
        }
        let progressed = round.sent + round.failed > 0;
        let next = outbox.next_due(name).ok().flatten();
        let wait = match next {
            Some(at) => {
                Duration::from_millis(u64::try_from(at - now_ms()).unwrap_or(0)).min(SENDER_TICK)
            }
            None => SENDER_TICK,
        };
        if wait.is_zero() && progressed {
            continue;
        }
        let wait = wait.max(Duration::from_millis(20));
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Follows the sessions named on `follow` (each from its next `seq`), handing their events on.
async fn follow_events(
    mut client: Client,
    mut follow: mpsc::UnboundedReceiver<(String, u64)>,
    tx: mpsc::Sender<Result<Event, ClientError>>,
) {
    let mut followed: HashSet<String> = HashSet::new();
    loop {
        loop {
            match follow.try_recv() {
                Ok((session, from)) => {
                    if !followed.insert(session.clone()) {
                        continue;
                    }
                    if let Err(e) = client.subscribe(&session, from, Verbosity::Summary).await {
                        if matches!(e, ClientError::Rejected(_)) {
                            continue; // a session that is gone: nothing to follow
                        }
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            }
        }
        match client.next_within(EVENTS_TICK).await {
            Ok(HostMessage::Event { event }) => {
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
            }
            Ok(HostMessage::Events { events, .. }) => {
                for event in events {
                    if tx.send(Ok(event)).await.is_err() {
                        return;
                    }
                }
            }
            Ok(_) | Err(ClientError::Timeout { .. }) => {}
            // The host is gone for longer than the client's reconnect window: keep trying (the
            // client resubscribes from its cursors once it is back), without spinning.
            Err(
                ClientError::Reconnect { .. } | ClientError::Daemon(_) | ClientError::Closed { .. },
            ) => {
                tokio::time::sleep(HOST_RETRY).await;
            }
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        }
    }
}
