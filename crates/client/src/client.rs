//! A connection to one host: hello, requests and their replies by message id, reconnects with
//! backoff that resend what was in flight and resubscribe from the cursors, and the stream of
//! what the host pushes (events, once each and in order).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use nucleic_protocol::{ClientMessage, HostMessage, Verbosity};

use crate::backoff::{Attempts, Backoff};
use crate::cursor::{Cursors, Verdict};
use crate::daemon::LocalDaemon;
use crate::error::{ClientError, rejection};
pub use crate::hello::Welcome;
use crate::hello::hello;
use crate::remote::{Opening, RemoteHost};
use crate::replies::{reply_id, reply_within};
use crate::transport::{Endpoint, Socket, message_name};

/// Who this client is and how long it waits for what.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Stable for this client: it scopes its message ids, so a resend after a reconnect is
    /// answered from the host's remembered reply instead of being carried out again.
    pub client_id: String,
    /// Only a label (who answered is recorded as the authenticated principal).
    pub client_name: String,
    /// `hello.features` (e.g. `eventBatches`).
    pub features: Vec<String>,
    /// Hand `sessionChanged` pushes to the caller (off: they are dropped).
    pub session_changes: bool,
    /// Hand every event on as it came — no cursor, no dedupe, no gap repair, no resubscribing
    /// after a reconnect — for checkers that judge the stream themselves (the soak, benches).
    pub raw_events: bool,
    /// Opening the socket, and then the welcome.
    pub connect_within: Duration,
    /// Sending one message.
    pub send_within: Duration,
    /// A reply to a request, unless it may take long (see `long_reply_within`).
    pub reply_within: Duration,
    /// A reply to a request that may run checks, setup scripts or git at length (`newSession`,
    /// `finish`, `runChecks`, `import`, `gc`, disk work).
    pub long_reply_within: Duration,
    /// Silence after which the connection counts as lost (the host pings every 20 s).
    pub idle_within: Duration,
    /// Finding (or starting) the local daemon at first.
    pub start_within: Duration,
    /// Reconnecting after a loss; [`Backoff::never`] makes a loss an error at once.
    pub reconnect: Backoff,
    /// `hello.onBehalfOf`: the person this connection acts for, recorded as who acted (only
    /// with the host's token; see [`Client::acting_for`]).
    pub on_behalf_of: Option<String>,
}

impl ClientOptions {
    /// Options with a fresh client id `<prefix>-<uuid>`: random per process, so a process
    /// reusing a pid is never answered from another's remembered replies.
    pub fn new(prefix: &str, client_name: impl Into<String>) -> ClientOptions {
        ClientOptions {
            client_id: format!("{prefix}-{}", uuid::Uuid::new_v4()),
            client_name: client_name.into(),
            features: Vec::new(),
            session_changes: false,
            raw_events: false,
            connect_within: Duration::from_secs(5),
            send_within: Duration::from_secs(30),
            reply_within: Duration::from_secs(300),
            long_reply_within: Duration::from_secs(3600),
            idle_within: Duration::from_secs(60),
            start_within: Duration::from_secs(15),
            reconnect: Backoff::default(),
            on_behalf_of: None,
        }
    }
}

/// What happened on this client's connections so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections made again after a loss.
    pub reconnects: u64,
    /// Requests sent again, with their message id, after a reconnect.
    pub resends: u64,
    /// Events dropped because they had been delivered already.
    pub duplicates: u64,
    /// Gaps seen in a subscription (each fetched again by resubscribing).
    pub gaps: u64,
}

/// How a connection is made (again).
#[derive(Debug, Clone)]
enum Route {
    Daemon(LocalDaemon),
    Fixed {
        endpoint: Endpoint,
        token: String,
    },
    /// A paired device's channel (reconnects use the `IK` handshake: the pairing is spent).
    Remote(Box<RemoteHost>),
}

/// A client of one host.
#[derive(Debug)]
pub struct Client {
    route: Route,
    options: ClientOptions,
    socket: Option<Socket>,
    welcome: Welcome,
    port: u16,
    next_id: u64,
    /// Messages for the caller that arrived while a request waited for its reply.
    inbox: VecDeque<HostMessage>,
    /// Requests sent and not answered yet, in order: resent after a reconnect.
    unanswered: VecDeque<ClientMessage>,
    cursors: Cursors,
    stats: Stats,
}

impl Client {
    /// Connects to the local daemon, starting it when `daemon` has a starter and no host runs.
    pub async fn local(daemon: LocalDaemon, options: ClientOptions) -> Result<Client, ClientError> {
        let deadline = Instant::now() + options.start_within;
        let (mut socket, port) = daemon.open(true, deadline, options.connect_within).await?;
        let welcome = hello(&mut socket, &options).await?;
        Ok(Client::with(Route::Daemon(daemon), options, socket, welcome, port))
    }

    /// Connects to the host at `endpoint` with its bearer `token`.
    pub async fn connect(
        endpoint: Endpoint,
        token: &str,
        options: ClientOptions,
    ) -> Result<Client, ClientError> {
        let mut socket = Socket::open(&endpoint, token, options.connect_within).await?;
        let welcome = hello(&mut socket, &options).await?;
        let port = match &endpoint {
            Endpoint::Tcp(addr) => addr.port(),
            Endpoint::Unix { port, .. } => *port,
        };
        let route = Route::Fixed { endpoint, token: token.to_owned() };
        Ok(Client::with(route, options, socket, welcome, port))
    }

    /// Connects to a host from afar as a device (see `remote`): `opening` pairs with a link's
    /// secret, or reconnects a paired device. The host's welcome proves it accepted the device.
    pub async fn remote(
        host: RemoteHost,
        opening: Opening,
        options: ClientOptions,
    ) -> Result<Client, ClientError> {
        let mut socket = Socket::open_remote(&host, &opening, options.connect_within).await?;
        let welcome = hello(&mut socket, &options).await?;
        Ok(Client::with(Route::Remote(Box::new(host)), options, socket, welcome, 0))
    }

    /// A second connection on this client's route that acts for `person` (`hello.onBehalfOf`,
    /// e.g. `telegram:12345`): the host records what it does as `person`'s. Only a connection
    /// with the host's token may (a device's or an MCP grant's is refused at hello). Its
    /// client id is this one's with the person appended, so its remembered replies are its own.
    pub async fn acting_for(&self, person: &str) -> Result<Client, ClientError> {
        let mut options = self.options.clone();
        options.client_id = format!("{}/{person}", self.options.client_id);
        options.on_behalf_of = Some(person.to_owned());
        options.session_changes = false;
        let within = options.connect_within;
        let (mut socket, port) = match &self.route {
            Route::Daemon(daemon) => daemon.open(false, Instant::now() + within, within).await?,
            Route::Fixed { endpoint, token } => {
                (Socket::open(endpoint, token, within).await?, self.port)
            }
            Route::Remote(host) => (Socket::open_remote(host, &Opening::Connect, within).await?, 0),
        };
        let welcome = hello(&mut socket, &options).await?;
        Ok(Client::with(self.route.clone(), options, socket, welcome, port))
    }

    fn with(
        route: Route,
        options: ClientOptions,
        socket: Socket,
        welcome: Welcome,
        port: u16,
    ) -> Client {
        Client {
            route,
            options,
            socket: Some(socket),
            welcome,
            port,
            next_id: 0,
            inbox: VecDeque::new(),
            unanswered: VecDeque::new(),
            cursors: Cursors::default(),
            stats: Stats::default(),
        }
    }

    /// The host's welcome on the current connection.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// The host's loopback port (0 for a daemon serving only its Unix socket).
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn client_id(&self) -> &str {
        &self.options.client_id
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The next `seq` this client wants of a subscribed session.
    pub fn next_seq(&self, session_id: &str) -> Option<u64> {
        self.cursors.next_seq(session_id)
    }

    /// A fresh message id (`m1`, `m2`, …: unique within this client id).
    pub fn id(&mut self) -> String {
        self.next_id += 1;
        format!("m{}", self.next_id)
    }

    /// Drops the connection as if it had broken; the next call makes a new one. For clients
    /// that know the link is gone (and for tests).
    pub fn disconnect(&mut self) {
        self.socket = None;
    }

    /// Closes the connection politely.
    pub async fn close(mut self) {
        if let Some(socket) = self.socket.take() {
            socket.close().await;
        }
    }

    /// Sends `message` and waits for its reply (deadline: [`reply_within`]). A lost
    /// connection is made again and the message resent with the same id; an `error` or
    /// `unsupported` reply is [`ClientError::Rejected`].
    pub async fn request(&mut self, message: ClientMessage) -> Result<HostMessage, ClientError> {
        let within = reply_within(&self.options, &message);
        self.request_within(message, within).await
    }

    /// [`Client::request`] with its own deadline.
    pub async fn request_within(
        &mut self,
        message: ClientMessage,
        within: Duration,
    ) -> Result<HostMessage, ClientError> {
        let name = message_name(&message);
        let id = message.message_id().map(str::to_owned).unwrap_or_default();
        let deadline = Instant::now() + within;
        self.send(message).await?;
        let what = format!("waiting for the reply to {name}");
        loop {
            let Some(reply) = self.pump(Some((deadline, within)), &what).await? else {
                continue;
            };
            if reply_id(&reply) != Some(id.as_str()) {
                self.inbox.push_back(reply);
                continue;
            }
            return match rejection(&reply) {
                Some(refused) => Err(ClientError::Rejected(refused)),
                None => Ok(reply),
            };
        }
    }

    /// Sends a request without waiting: its reply comes from [`Client::next`] like anything
    /// else (pipelining clients match it by [`reply_id`]). Until it is answered, a reconnect
    /// resends it with its id.
    pub async fn send(&mut self, message: ClientMessage) -> Result<(), ClientError> {
        if message.message_id().is_none() {
            let what = message_name(&message);
            return Err(ClientError::Send { what, message: "it has no message id".into() });
        }
        match &message {
            ClientMessage::Subscribe { session_id, from_seq, verbosity, .. }
                if !self.options.raw_events =>
            {
                self.cursors.subscribe(session_id, *from_seq, *verbosity);
            }
            ClientMessage::Unsubscribe { session_id, .. } => self.cursors.unsubscribe(session_id),
            _ => {}
        }
        self.unanswered.push_back(message.clone());
        let send_within = self.options.send_within;
        let Some(socket) = self.socket.as_mut() else {
            // Reconnecting sends every unanswered request, this one included.
            return self.lose(not_connected()).await;
        };
        match socket.send(&message, send_within).await {
            Ok(()) => Ok(()),
            Err(e) if e.is_connection_loss() => self.lose(e).await,
            Err(e) => Err(e),
        }
    }

    /// The next message the host pushes (events, and `sessionChanged` when asked for), for as
    /// long as the connection lives: silence for [`ClientOptions::idle_within`] is a lost
    /// connection, which is made again (resubscribing from the cursors).
    pub async fn next(&mut self) -> Result<HostMessage, ClientError> {
        loop {
            if let Some(message) = self.inbox.pop_front() {
                return Ok(message);
            }
            if let Some(message) = self.pump(None, "waiting for the host").await? {
                return Ok(message);
            }
        }
    }

    /// [`Client::next`], giving up after `within`.
    pub async fn next_within(&mut self, within: Duration) -> Result<HostMessage, ClientError> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(message) = self.inbox.pop_front() {
                return Ok(message);
            }
            let what = "waiting for a message from the host";
            if let Some(message) = self.pump(Some((deadline, within)), what).await? {
                return Ok(message);
            }
        }
    }

    /// Reads one message: `Some` for the caller, `None` when it was the client's own business
    /// (a duplicate, a resubscription's ack) or the connection was made again.
    async fn pump(
        &mut self,
        deadline: Option<(Instant, Duration)>,
        what: &str,
    ) -> Result<Option<HostMessage>, ClientError> {
        let idle_within = self.options.idle_within;
        let Some(socket) = self.socket.as_mut() else {
            self.lose(not_connected()).await?;
            return Ok(None);
        };
        let idle_at = socket.last_heard + idle_within;
        let until = deadline.map_or(idle_at, |(d, _)| d.min(idle_at));
        match socket.recv(until).await {
            Ok(Some(message)) => self.filter(message).await,
            Ok(None) => {
                if let Some((at, within)) = deadline
                    && Instant::now() >= at
                {
                    return Err(ClientError::Timeout { what: what.to_owned(), within });
                }
                let cause = ClientError::Timeout {
                    what: format!("hearing from the host {}", socket.at()),
                    within: idle_within,
                };
                self.lose(cause).await?;
                Ok(None)
            }
            Err(e) if e.is_connection_loss() => {
                self.lose(e).await?;
                Ok(None)
            }
            Err(e @ ClientError::Closed { .. }) => {
                self.socket = None;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Events through their cursors; the client's own replies and unwanted pushes dropped.
    async fn filter(&mut self, message: HostMessage) -> Result<Option<HostMessage>, ClientError> {
        if self.options.raw_events {
            return Ok(match message {
                HostMessage::SessionChanged { .. } if !self.options.session_changes => None,
                other => {
                    self.answered(&other);
                    Some(other)
                }
            });
        }
        match message {
            HostMessage::Event { event } => {
                let keep = self.judge(&event).await?;
                Ok(keep.then_some(HostMessage::Event { event }))
            }
            HostMessage::Events { session_id, events } => {
                let mut kept = Vec::with_capacity(events.len());
                for event in events {
                    match self.cursors.check(&event) {
                        Verdict::Deliver => kept.push(event),
                        Verdict::Duplicate => self.stats.duplicates += 1,
                        Verdict::Resyncing | Verdict::NotSubscribed => {}
                        Verdict::Gap { expected } => {
                            // What was taken goes to the caller even if this call is dropped
                            // while resubscribing (the cursor already moved past it).
                            self.stats.gaps += 1;
                            if !kept.is_empty() {
                                let events = std::mem::take(&mut kept);
                                let session_id = session_id.clone();
                                self.inbox.push_back(HostMessage::Events { session_id, events });
                            }
                            self.resubscribe(&session_id, expected, Verbosity::Full).await?;
                            break;
                        }
                    }
                }
                Ok((!kept.is_empty()).then_some(HostMessage::Events { session_id, events: kept }))
            }
            HostMessage::SessionChanged { .. } if !self.options.session_changes => Ok(None),
            HostMessage::Ack { ref message_id, .. } if self.cursors.is_resync(message_id) => {
                self.cursors.resynced(message_id);
                Ok(None)
            }
            HostMessage::Error { message_id: Some(ref id), .. } if self.cursors.is_resync(id) => {
                let session = self.cursors.resynced(id).unwrap_or_default();
                self.cursors.unsubscribe(&session);
                let why = rejection(&message).map(|r| r.to_string()).unwrap_or_default();
                Err(ClientError::Daemon(format!("resubscribing to {session} failed: {why}")))
            }
            other => {
                self.answered(&other);
                Ok(Some(other))
            }
        }
    }

    /// Forgets the request `reply` answers; a refused subscription has no cursor.
    fn answered(&mut self, reply: &HostMessage) {
        let Some(id) = reply_id(reply) else { return };
        let Some(at) = self.unanswered.iter().position(|m| m.message_id() == Some(id)) else {
            return;
        };
        let request = self.unanswered.remove(at);
        if let Some(ClientMessage::Subscribe { session_id, .. }) = request
            && rejection(reply).is_some()
        {
            self.cursors.unsubscribe(&session_id);
        }
    }

    /// Whether `event` goes to the caller; a gap resubscribes from the cursor.
    async fn judge(&mut self, event: &nucleic_protocol::Event) -> Result<bool, ClientError> {
        match self.cursors.check(event) {
            Verdict::Deliver => Ok(true),
            Verdict::Duplicate => {
                self.stats.duplicates += 1;
                Ok(false)
            }
            Verdict::Gap { expected } => {
                self.stats.gaps += 1;
                let verbosity = Verbosity::Full;
                self.resubscribe(&event.session_id, expected, verbosity).await?;
                Ok(false)
            }
            Verdict::Resyncing | Verdict::NotSubscribed => Ok(false),
        }
    }

    /// Subscribes `session` again from `from_seq` (the host replaces the old subscription).
    async fn resubscribe(
        &mut self,
        session: &str,
        from_seq: u64,
        verbosity: Verbosity,
    ) -> Result<(), ClientError> {
        let message_id = self.id();
        let message = ClientMessage::Subscribe {
            message_id: message_id.clone(),
            session_id: session.to_owned(),
            from_seq,
            verbosity,
        };
        self.cursors.resyncing(session, message_id);
        let send_within = self.options.send_within;
        let Some(socket) = self.socket.as_mut() else { return Ok(()) };
        match socket.send(&message, send_within).await {
            Ok(()) => Ok(()),
            // The next read makes the connection again, which resubscribes anyway.
            Err(e) if e.is_connection_loss() => {
                self.socket = None;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The connection is gone (`cause`): makes it again within the reconnect deadline, says
    /// hello, resubscribes every session from its cursor and resends what is unanswered.
    async fn lose(&mut self, cause: ClientError) -> Result<(), ClientError> {
        self.socket = None;
        let backoff = self.options.reconnect;
        if backoff.within.is_zero() {
            return Err(cause);
        }
        let mut attempts = Attempts::start(backoff);
        let cause = cause.to_string();
        loop {
            match self.reconnect_once(attempts.deadline()).await {
                Ok(()) => return Ok(()),
                Err(e) if e.is_connection_loss() || matches!(e, ClientError::Daemon(_)) => {
                    self.socket = None;
                    match attempts.next_wait() {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => {
                            let within = backoff.within;
                            let last = Box::new(e);
                            return Err(ClientError::Reconnect { cause, within, last });
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn reconnect_once(&mut self, deadline: Instant) -> Result<(), ClientError> {
        let connect_within = self.options.connect_within;
        let (mut socket, port) = match &self.route {
            Route::Daemon(daemon) => daemon.open(false, deadline, connect_within).await?,
            Route::Fixed { endpoint, token } => {
                let left = deadline.saturating_duration_since(Instant::now());
                let socket = Socket::open(endpoint, token, connect_within.min(left)).await?;
                (socket, self.port)
            }
            Route::Remote(host) => {
                let left = deadline.saturating_duration_since(Instant::now());
                let within = connect_within.min(left);
                (Socket::open_remote(host, &Opening::Connect, within).await?, 0)
            }
        };
        let welcome = hello(&mut socket, &self.options).await?;
        // An unanswered subscribe is resent as it is (its cursor has not moved: events follow
        // its ack), so it is not resubscribed twice.
        let pending: Vec<&str> = self
            .unanswered
            .iter()
            .filter_map(|m| match m {
                ClientMessage::Subscribe { session_id, .. } => Some(session_id.as_str()),
                _ => None,
            })
            .collect();
        let sessions: Vec<(String, u64, Verbosity)> = self
            .cursors
            .iter()
            .filter(|(s, _)| !pending.contains(&s.as_str()))
            .map(|(s, c)| (s.clone(), c.next, c.verbosity))
            .collect();
        let send_within = self.options.send_within;
        for (session_id, from_seq, verbosity) in sessions {
            let message_id = self.id();
            self.cursors.resyncing(&session_id, message_id.clone());
            let message = ClientMessage::Subscribe { message_id, session_id, from_seq, verbosity };
            socket.send(&message, send_within).await?;
        }
        for message in &self.unanswered {
            socket.send(message, send_within).await?;
            self.stats.resends += 1;
        }
        self.socket = Some(socket);
        self.welcome = welcome;
        self.port = port;
        self.stats.reconnects += 1;
        Ok(())
    }
}

fn not_connected() -> ClientError {
    ClientError::Closed {
        at: "(not connected)".into(),
        code: None,
        reason: "the connection was dropped".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_differ_per_options_and_keep_the_prefix() {
        let a = ClientOptions::new("cli", "terminal");
        let b = ClientOptions::new("cli", "terminal");
        assert!(a.client_id.starts_with("cli-"));
        assert_ne!(a.client_id, b.client_id);
    }
}
