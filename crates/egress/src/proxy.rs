//! The host side: an HTTP proxy on a Unix socket that tunnels CONNECTs and forwards plain HTTP
//! to what the rules allow, refuses everything else with a 403 saying why, and reports each
//! decision. A name that resolves only to this machine's own or link-local addresses is refused
//! (DNS rebinding onto the host's services); an IP literal is reached only when listed exactly. A
//! name off the list is asked about when the rules can ask ([`crate::ask`]) and a command asked
//! for it; the agent program's own background traffic to it is refused without asking.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;

use crate::allow::{AllowList, Destination};
use crate::ask::{AnswerFuture, Asked, Question};
use crate::handoff::{Handoff, take_over};
use crate::head::{HeadError, Request, parse, read_head};
use crate::origin::Origin;
use crate::resolve::{Resolver, is_own};

/// A decision of the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressEvent {
    /// Allowed and connected upstream.
    Allowed { host: String, port: u16, method: String },
    /// Refused by the rules (answered 403, or the forwarded connection closed).
    Refused { host: String, port: u16, method: String, reason: String },
    /// Allowed, but the upstream could not be reached (answered 502 or 504).
    Unreachable { host: String, port: u16, method: String, reason: String },
}

/// What the proxy may let through; the host can change it while the proxy runs.
pub trait EgressRules: Send + Sync {
    /// Whether `dest` is allowed. An IP literal is allowed only when listed exactly, so a
    /// listed literal is reached even on loopback; a name never leads there.
    fn allows(&self, dest: &Destination) -> bool;

    /// Asks whether `question`'s name, which [`EgressRules::allows`] refused, may be reached
    /// after all; `None` (the default): it is refused at once. Called once per destination
    /// while a question is open (every connection to it waits on that answer), never for an IP
    /// literal or `localhost`; an answer should come within the question's deadline.
    fn ask(&self, question: Question) -> Option<AnswerFuture> {
        let _ = question;
        None
    }

    /// Whether the agent program itself (not a command it ran) may reach `dest`, which
    /// [`EgressRules::allows`] refused: a fetch the person allowed that the program makes
    /// (Claude Code's `WebFetch`). `false` by default.
    fn grants_program(&self, dest: &Destination) -> bool {
        let _ = dest;
        false
    }
}

impl EgressRules for AllowList {
    fn allows(&self, dest: &Destination) -> bool {
        self.permits(dest)
    }
}

/// Rules the host changes live (a poisoned lock allows nothing).
impl EgressRules for RwLock<AllowList> {
    fn allows(&self, dest: &Destination) -> bool {
        self.read().is_ok_and(|l| l.permits(dest))
    }
}

/// The proxy's deadlines, limits and resolver.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// A client must have handed over its connection and sent its whole request head within
    /// this.
    pub head_deadline: Duration,
    /// Resolving and connecting upstream must be done within this.
    pub connect_deadline: Duration,
    /// The most connections served at once; more are closed at once (the host's descriptors
    /// are not the agent's to exhaust).
    pub max_connections: usize,
    pub resolver: Resolver,
    /// How long a connection to a name off the list is held while the rules ask about it.
    pub ask_deadline: Duration,
}

impl Default for ProxyConfig {
    fn default() -> ProxyConfig {
        ProxyConfig {
            head_deadline: Duration::from_secs(10),
            connect_deadline: Duration::from_secs(10),
            max_connections: 256,
            resolver: Resolver::System,
            ask_deadline: Duration::from_secs(300),
        }
    }
}

/// Serves `listener` with the default [`ProxyConfig`] until the task is dropped.
pub async fn serve(
    listener: UnixListener,
    rules: Arc<dyn EgressRules>,
    events: UnboundedSender<EgressEvent>,
) {
    serve_with(listener, rules, events, ProxyConfig::default()).await;
}

/// Serves `listener`: one task per connection, each ended when the client or upstream closes;
/// all of them end when this task is dropped.
pub async fn serve_with(
    listener: UnixListener,
    rules: Arc<dyn EgressRules>,
    events: UnboundedSender<EgressEvent>,
    config: ProxyConfig,
) {
    let config = Arc::new(config);
    let asked = Arc::new(Asked::default());
    let slots = Arc::new(Semaphore::new(config.max_connections));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            // Finished connection tasks are reaped as they end.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok((stream, _)) = accepted else {
            // Out of descriptors, say: the next accept may work.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        // Over the limit the handed-over connection is dropped unread: the agent sees it closed.
        let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
        let (rules, events, config) = (rules.clone(), events.clone(), config.clone());
        let asked = asked.clone();
        connections.spawn(async move {
            let rules = Rules { rules: &*rules, asked: &asked };
            take(stream, rules, &events, &config).await;
            drop(slot);
        });
    }
}

/// The rules and the questions asked of them.
#[derive(Clone, Copy)]
struct Rules<'a> {
    rules: &'a dyn EgressRules,
    asked: &'a Asked,
}

/// Takes the agent's connection the bridge handed over on `stream`, and serves it.
async fn take(
    stream: UnixStream,
    rules: Rules<'_>,
    events: &UnboundedSender<EgressEvent>,
    config: &ProxyConfig,
) {
    let taken = tokio::time::timeout(config.head_deadline, take_over(&stream)).await;
    drop(stream);
    let Ok(Ok((what, fd))) = taken else { return };
    // Whatever descriptor came: one that is not a socket tokio can poll ends here.
    let agent = std::net::TcpStream::from(fd);
    let Ok(agent) = agent.set_nonblocking(true).and_then(|()| TcpStream::from_std(agent)) else {
        return;
    };
    match what {
        Handoff::Proxy(origin) => handle(agent, origin, rules, events, config).await,
        Handoff::Forward(target) => {
            let Ok(dest) = Destination::parse(&target, None) else { return };
            let request = Request { method: "FORWARD".into(), dest, upstream_head: Vec::new() };
            // Only the listed model endpoints are forwarded; nothing there is asked.
            match open_upstream(&request, Origin::Agent, rules, config).await {
                Ok(upstream) => {
                    report(events, &request, None);
                    let _ = crate::splice::relay(&agent, &upstream).await;
                }
                // The agent's connection is closed: its client sees the end at once.
                Err(failure) => report(events, &request, Some(&failure)),
            }
        }
    }
}

/// Why a request got no upstream connection.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// The rules refuse it (403).
    Refused(String),
    /// Allowed, but not reached (502).
    Unreachable(String),
    /// Allowed, but resolving and connecting took longer than the deadline (504).
    TimedOut(String),
}

impl Failure {
    fn status(&self) -> &'static str {
        match self {
            Failure::Refused(_) => "403 Forbidden",
            Failure::Unreachable(_) => "502 Bad Gateway",
            Failure::TimedOut(_) => "504 Gateway Timeout",
        }
    }

    fn reason(&self) -> &str {
        match self {
            Failure::Refused(why) | Failure::Unreachable(why) | Failure::TimedOut(why) => why,
        }
    }
}

fn report(events: &UnboundedSender<EgressEvent>, request: &Request, failure: Option<&Failure>) {
    let (host, port, method) =
        (request.dest.host.clone(), request.dest.port, request.method.clone());
    let event = match failure {
        None => EgressEvent::Allowed { host, port, method },
        Some(Failure::Refused(reason)) => {
            EgressEvent::Refused { host, port, method, reason: reason.clone() }
        }
        Some(Failure::Unreachable(reason) | Failure::TimedOut(reason)) => {
            EgressEvent::Unreachable { host, port, method, reason: reason.clone() }
        }
    };
    // Nobody listening to the decisions does not stop the proxy.
    let _ = events.send(event);
}

async fn handle(
    mut client: TcpStream,
    origin: Origin,
    rules: Rules<'_>,
    events: &UnboundedSender<EgressEvent>,
    config: &ProxyConfig,
) {
    let read = tokio::time::timeout(config.head_deadline, read_head(&mut client)).await;
    let (head, early) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(e)) => return answer_bad_head(&mut client, &e).await,
        // A client that never finishes its head is closed: nothing to answer.
        Err(_) => return,
    };
    let request = match parse(&head) {
        Ok(r) => r,
        Err(e) => return answer_bad_head(&mut client, &e).await,
    };
    let upstream = match open_upstream(&request, origin, rules, config).await {
        Ok(upstream) => upstream,
        Err(failure) => {
            report(events, &request, Some(&failure));
            let verdict = match failure {
                Failure::Refused(_) => "refused",
                Failure::Unreachable(_) | Failure::TimedOut(_) => "not reached",
            };
            let body =
                format!("nucleic egress: {} {verdict}: {}\n", request.dest, failure.reason());
            return answer(&mut client, failure.status(), &body).await;
        }
    };
    report(events, &request, None);
    relay(client, upstream, &request, &early).await;
}

/// The upstream connection `request` from `origin` may have, or why not.
async fn open_upstream(
    request: &Request,
    origin: Origin,
    rules: Rules<'_>,
    config: &ProxyConfig,
) -> Result<TcpStream, Failure> {
    let dest = &request.dest;
    let listed = rules.rules.allows(dest);
    let granted = !listed && origin == Origin::Agent && rules.rules.grants_program(dest);
    if !listed && !granted && origin == Origin::Agent {
        // Update checks, telemetry, plugin lists: not a question for the person.
        return Err(Failure::Refused(format!(
            "{dest} is not on the allow-list, and the agent program itself asked for it (its \
             own background traffic, not a command it ran): refused without asking"
        )));
    }
    if !listed && !granted {
        // Held while asked (without resolving the name: no query leaves before a yes).
        let asked = rules.asked.decide(rules.rules, dest, &request.method, config.ask_deadline);
        asked.await.map_err(Failure::Refused)?;
    }
    let connect = async {
        let found = config
            .resolver
            .resolve(dest)
            .await
            .map_err(|e| Failure::Unreachable(format!("cannot resolve {}: {e}", dest.host)))?;
        if found.is_empty() {
            return Err(Failure::Unreachable(format!("{} resolves to no address", dest.host)));
        }
        // A literal was listed exactly (the rules said so): it is reached wherever it is.
        let addresses: Vec<IpAddr> = match dest.ip() {
            Some(_) => found,
            None => found.into_iter().filter(|ip| !is_own(ip)).collect(),
        };
        if addresses.is_empty() {
            return Err(Failure::Refused(format!(
                "{} resolves only to this machine's own addresses (loopback, link-local, \
                 unspecified, multicast)",
                dest.host
            )));
        }
        let mut last = String::new();
        for ip in addresses {
            let at = SocketAddr::new(ip, dest.port);
            match TcpStream::connect(at).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = format!("cannot connect to {at}: {e}"),
            }
        }
        Err(Failure::Unreachable(last))
    };
    match tokio::time::timeout(config.connect_deadline, connect).await {
        Ok(result) => result,
        Err(_) => Err(Failure::TimedOut(format!(
            "resolving and connecting to {dest} timed out after {} s",
            config.connect_deadline.as_secs_f32()
        ))),
    }
}

/// Tunnels (CONNECT) or forwards (plain HTTP) until either side closes.
async fn relay(mut client: TcpStream, mut upstream: TcpStream, request: &Request, early: &[u8]) {
    let started = if request.is_connect() {
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await
    } else {
        upstream.write_all(&request.upstream_head).await
    };
    if started.is_err() || (!early.is_empty() && upstream.write_all(early).await.is_err()) {
        return;
    }
    // Either side's error or end closes both: the client sees a clean end of stream.
    let _ = crate::splice::relay(&client, &upstream).await;
}

async fn answer_bad_head(client: &mut TcpStream, error: &HeadError) {
    if let Some((status, why)) = error.status() {
        answer(client, status, &format!("nucleic egress: {why}\n")).await;
    }
}

/// Answers `status` with a one-line text `body`, then closes (within a deadline: a client
/// that reads nothing does not hold the task).
async fn answer(client: &mut TcpStream, status: &str, body: &str) {
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let sent = async {
        client.write_all(reply.as_bytes()).await?;
        client.shutdown().await
    };
    let _ = tokio::time::timeout(ANSWER_DEADLINE, sent).await;
}

/// How long a client has to take an error answer.
const ANSWER_DEADLINE: Duration = Duration::from_secs(5);
