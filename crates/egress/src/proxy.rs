//! The host side: an HTTP proxy on a Unix socket that tunnels CONNECTs and forwards plain HTTP
//! to what the rules allow, refuses everything else with a 403 saying why, and reports each
//! decision. A name that resolves only to this machine's own or link-local addresses is refused
//! (DNS rebinding onto the host's services); an IP literal is reached only when listed exactly.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc::UnboundedSender;

use crate::allow::{AllowList, Destination};
use crate::head::{HeadError, Request, parse, read_head};

/// A decision of the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressEvent {
    Allowed { host: String, port: u16, method: String },
    Refused { host: String, port: u16, method: String, reason: String },
}

/// What the proxy may let through; the host can change it while the proxy runs.
pub trait EgressRules: Send + Sync {
    /// Whether `dest` is allowed at all.
    fn allows(&self, dest: &Destination) -> bool;
    /// Whether `dest` is an IP literal listed exactly (then even a loopback one is reached).
    fn names_address(&self, dest: &Destination) -> bool;
}

impl EgressRules for AllowList {
    fn allows(&self, dest: &Destination) -> bool {
        self.permits(dest)
    }
    fn names_address(&self, dest: &Destination) -> bool {
        AllowList::names_address(self, dest)
    }
}

impl EgressRules for RwLock<AllowList> {
    fn allows(&self, dest: &Destination) -> bool {
        self.read().is_ok_and(|l| l.permits(dest))
    }
    fn names_address(&self, dest: &Destination) -> bool {
        self.read().is_ok_and(|l| l.names_address(dest))
    }
}

/// How names are resolved.
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    /// The host's resolver.
    #[default]
    System,
    /// Fixed answers (tests); an unknown name does not resolve.
    Fixed(HashMap<String, Vec<IpAddr>>),
}

impl Resolver {
    async fn resolve(&self, dest: &Destination) -> std::io::Result<Vec<IpAddr>> {
        match self {
            Resolver::System => {
                let found = tokio::net::lookup_host((dest.host.as_str(), dest.port)).await?;
                Ok(found.map(|a| a.ip()).collect())
            }
            Resolver::Fixed(map) => map
                .get(&dest.host)
                .cloned()
                .ok_or_else(|| std::io::Error::other(format!("{} does not resolve", dest.host))),
        }
    }
}

/// The proxy's deadlines and resolver.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// A client must have sent its whole request head within this.
    pub head_deadline: Duration,
    /// Resolving and connecting upstream must be done within this.
    pub connect_deadline: Duration,
    pub resolver: Resolver,
}

impl Default for ProxyConfig {
    fn default() -> ProxyConfig {
        ProxyConfig {
            head_deadline: Duration::from_secs(10),
            connect_deadline: Duration::from_secs(10),
            resolver: Resolver::System,
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

/// Serves `listener`: one task per connection, each ended when the client or upstream closes.
pub async fn serve_with(
    listener: UnixListener,
    rules: Arc<dyn EgressRules>,
    events: UnboundedSender<EgressEvent>,
    config: ProxyConfig,
) {
    let config = Arc::new(config);
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
        let (rules, events, config) = (rules.clone(), events.clone(), config.clone());
        connections.spawn(async move { take(stream, &*rules, &events, &config).await });
    }
}

/// Takes the agent's connection the bridge handed over on `stream`, and serves it.
async fn take(
    stream: UnixStream,
    rules: &dyn EgressRules,
    events: &UnboundedSender<EgressEvent>,
    config: &ProxyConfig,
) {
    let taken =
        tokio::time::timeout(config.head_deadline, crate::handoff::take_over(&stream)).await;
    drop(stream);
    let Ok(Ok((what, fd))) = taken else { return };
    let agent = std::net::TcpStream::from(fd);
    let Ok(agent) = agent.set_nonblocking(true).and_then(|()| TcpStream::from_std(agent)) else {
        return;
    };
    match what {
        crate::handoff::Handoff::Proxy => handle(agent, rules, events, config).await,
        crate::handoff::Handoff::Forward(target) => {
            let Ok(dest) = Destination::parse(&target, None) else { return };
            let request = Request { method: "FORWARD".into(), dest, upstream_head: Vec::new() };
            match open_upstream(&request, rules, config).await {
                Ok(upstream) => {
                    report_allowed(events, &request);
                    let _ = crate::splice::relay(&agent, &upstream).await;
                }
                // The agent's connection is closed: it sees the refusal as a reset.
                Err(reason) => report_refused(events, &request, reason),
            }
        }
    }
}

fn report_allowed(events: &UnboundedSender<EgressEvent>, request: &Request) {
    let _ = events.send(EgressEvent::Allowed {
        host: request.dest.host.clone(),
        port: request.dest.port,
        method: request.method.clone(),
    });
}

fn report_refused(events: &UnboundedSender<EgressEvent>, request: &Request, reason: String) {
    let _ = events.send(EgressEvent::Refused {
        host: request.dest.host.clone(),
        port: request.dest.port,
        method: request.method.clone(),
        reason,
    });
}

async fn handle(
    mut client: TcpStream,
    rules: &dyn EgressRules,
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
    let upstream = match open_upstream(&request, rules, config).await {
        Ok(upstream) => upstream,
        Err(reason) => {
            report_refused(events, &request, reason.clone());
            let status = if reason.contains("allow-list") || reason.contains("own addresses") {
                "403 Forbidden"
            } else {
                "502 Bad Gateway"
            };
            let body = format!("nucleic egress: {} refused: {reason}\n", request.dest);
            return answer(&mut client, status, &body).await;
        }
    };
    report_allowed(events, &request);
    relay(client, upstream, &request, &early).await;
}

/// The upstream connection `request` may have, or why not.
async fn open_upstream(
    request: &Request,
    rules: &dyn EgressRules,
    config: &ProxyConfig,
) -> Result<TcpStream, String> {
    let dest = &request.dest;
    if !rules.allows(dest) {
        return Err(format!("{dest} is not on this session's egress allow-list"));
    }
    let connect = async {
        let addresses = match dest.ip() {
            Some(ip) => vec![ip],
            None => {
                let found = config
                    .resolver
                    .resolve(dest)
                    .await
                    .map_err(|e| format!("cannot resolve {}: {e}", dest.host))?;
                let outside: Vec<IpAddr> = found.into_iter().filter(|ip| !is_own(ip)).collect();
                if outside.is_empty() {
                    return Err(format!(
                        "{} resolves only to this machine's own addresses (loopback, link-local)",
                        dest.host
                    ));
                }
                outside
            }
        };
        let mut last = String::from("no address");
        for ip in addresses {
            match TcpStream::connect(SocketAddr::new(ip, dest.port)).await {
                Ok(stream) => return Ok(stream),
                Err(e) => {
                    last = format!("cannot connect to {}: {e}", SocketAddr::new(ip, dest.port))
                }
            }
        }
        Err(last)
    };
    match tokio::time::timeout(config.connect_deadline, connect).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "connecting to {dest} timed out after {} s",
            config.connect_deadline.as_secs_f32()
        )),
    }
}

/// Whether `ip` is this machine's own or link-local (never reached through a name).
fn is_own(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unicast_link_local()
                || v6.to_ipv4_mapped().is_some_and(|v4| is_own(&IpAddr::V4(v4)))
        }
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

async fn answer(client: &mut TcpStream, status: &str, body: &str) {
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(reply.as_bytes()).await;
    let _ = client.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_addresses_are_loopback_link_local_and_the_like() {
        for own in [
            "127.0.0.1",
            "127.9.9.9",
            "169.254.1.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_own(&own.parse().unwrap()), "{own}");
        }
        for outside in ["10.1.2.3", "93.184.216.34", "2001:db8::1"] {
            assert!(!is_own(&outside.parse().unwrap()), "{outside}");
        }
    }
}
