//! Test support: a real host and server in process (as `crates/server/tests/server/support.rs`
//! starts them) behind a TCP proxy that can cut or mute connections, and scripted fake hosts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nucleic_client::{Backoff, Client, ClientOptions, Endpoint};
use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_server::AppState;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

/// A host over a fresh home, served on a loopback port, reached through a [`Proxy`].
pub struct Served {
    pub dir: tempfile::TempDir,
    pub token: String,
    pub proxy: Proxy,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn serve() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::open(HostConfig {
        home: dir.path().join("home"),
        agents: AgentPaths {
            claude: None,
            codex: None,
            gemini: None,
            opencode: None,
            qwen: None,
            sim_program: "/nonexistent".into(),
            sim_prefix: Vec::new(),
            nucleic: "/nonexistent".into(),
        },
        limits: Limits::default(),
        approval_timeout: None,
        setup_timeout: Duration::from_secs(5),
        agent_env: Vec::new(),
        agent_isolation: nucleic_host::AgentIsolation::Auto,
        keepers: None,
        policy: false,
    })
    .await
    .unwrap();
    let token = host.token().to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let direct = listener.local_addr().unwrap();
    let proxy = Proxy::start(direct).await;
    // The server checks `Host` against the address clients dial: the proxy's.
    let state = AppState::new(host, proxy.addr);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(nucleic_server::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    Served { dir, token, proxy, _stop: stop }
}

impl Served {
    /// A client through the proxy that reconnects quickly.
    pub async fn client(&self, name: &str) -> Client {
        self.client_with(name, false).await
    }

    /// [`Served::client`], with `raw_events` as given.
    pub async fn client_with(&self, name: &str, raw_events: bool) -> Client {
        let mut options = ClientOptions::new("test", name);
        options.raw_events = raw_events;
        // Far below nextest's slow timeout: a lost resend fails the test instead of hanging it.
        options.reply_within = Duration::from_secs(10);
        options.long_reply_within = Duration::from_secs(10);
        options.reconnect = Backoff {
            first: Duration::from_millis(20),
            max: Duration::from_millis(200),
            within: Duration::from_secs(10),
        };
        Client::connect(Endpoint::Tcp(self.proxy.addr), &self.token, options).await.unwrap()
    }

    /// Writes `n` events of one session as a plain JSONL export and imports it; returns the
    /// new session's id.
    pub async fn imported_session(&self, client: &mut Client, n: u64) -> String {
        let path = self.dir.path().join(format!("export-{n}.jsonl"));
        std::fs::write(&path, export_lines(n)).unwrap();
        let intent = nucleic_protocol::Intent::Import { path: path.display().to_string() };
        let summary: nucleic_protocol::SessionSummary = client.intent_as(intent).await.unwrap();
        summary.session_id
    }
}

/// `n` raw events of one session, numbered 1..=n.
pub fn export_lines(n: u64) -> String {
    (1..=n)
        .map(|seq| {
            let event = serde_json::json!({
                "seq": seq,
                "at": "2026-01-01T00:00:00Z",
                "sessionID": "exported",
                "backend": "claudeCode",
                "nativeType": "x",
                "kind": {"type": "raw", "native": {"n": seq}},
            });
            format!("{event}\n")
        })
        .collect()
}

/// A TCP proxy to `upstream` whose connections can be cut (as if the server dropped them) or
/// muted (the server's bytes no longer reach the client).
pub struct Proxy {
    pub addr: SocketAddr,
    cut: Arc<tokio::sync::watch::Sender<u64>>,
    mute: Arc<AtomicBool>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (cut, cuts) = tokio::sync::watch::channel(0u64);
        let mute = Arc::new(AtomicBool::new(false));
        let muted = Arc::clone(&mute);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut cuts = cuts.clone();
                cuts.mark_unchanged();
                let muted = Arc::clone(&muted);
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(upstream).await else { return };
                    tokio::select! {
                        _ = pipe(client, server, muted) => {}
                        _ = cuts.changed() => {}
                    }
                });
            }
        });
        Proxy { addr, cut: Arc::new(cut), mute }
    }

    /// Drops every open connection (new ones are forwarded again, unmuted).
    pub fn cut(&self) {
        (self.cut_handle())();
    }

    /// [`Proxy::cut`] for another task.
    pub fn cut_handle(&self) -> impl Fn() + Send + 'static {
        let (cut, mute) = (Arc::clone(&self.cut), Arc::clone(&self.mute));
        move || {
            mute.store(false, Ordering::SeqCst);
            cut.send_modify(|n| *n += 1);
        }
    }

    /// From now on the server's bytes are dropped on the way to the client.
    pub fn mute(&self) {
        self.mute.store(true, Ordering::SeqCst);
    }
}

async fn pipe(
    client: tokio::net::TcpStream,
    server: tokio::net::TcpStream,
    muted: Arc<AtomicBool>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    };
    let down = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let Ok(n) = server_read.read(&mut buf).await else { return };
            if n == 0 {
                return;
            }
            if !muted.load(Ordering::SeqCst) && client_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

/// How a fake host behaves after accepting a TCP connection.
#[derive(Debug, Clone, Copy)]
pub enum Fake {
    /// Never completes the WebSocket handshake.
    Silent,
    /// Upgrades, reads hello, says nothing.
    NoWelcome,
    /// Welcomes, then answers every request with these frames and nothing else.
    Answers(&'static [&'static str]),
}

/// A fake host on a loopback port.
pub async fn fake_host(fake: Fake) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Fake::Silent = fake {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    drop(stream);
                    return;
                }
                let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else { return };
                let _hello = ws.next().await;
                let Fake::Answers(frames) = fake else {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    return;
                };
                let welcome = r#"{"type":"welcome","hostVersion":"fake","protocolVersion":1}"#;
                if ws.send(Message::Text(welcome.into())).await.is_err() {
                    return;
                }
                while let Some(Ok(frame)) = ws.next().await {
                    if !frame.is_text() {
                        continue;
                    }
                    for text in frames {
                        if ws.send(Message::Text((*text).into())).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// Options whose every wait is short, with no reconnects.
pub fn quick(name: &str) -> ClientOptions {
    let mut options = ClientOptions::new("test", name);
    options.connect_within = Duration::from_millis(300);
    options.reply_within = Duration::from_millis(300);
    options.reconnect = Backoff::never();
    options
}
