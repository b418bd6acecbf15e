//! What a client may hold and how long the server waits for it: the connection cap, timeouts,
//! requests in flight and outbox bytes per WebSocket (`docs/security.md` has the figures).

use std::time::Duration;

/// The server's bounds. `Default` is what `nucleic serve` uses; tests shorten the timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Open TCP connections (WebSockets included); one more is answered `503` and closed.
    pub max_connections: usize,
    /// A request's headers must arrive within this, counted from when the server starts waiting
    /// for them (a new connection, or an idle keep-alive one); else the connection is closed.
    pub header_read_timeout: Duration,
    /// A WebSocket must send `hello` within this after the upgrade.
    pub hello_timeout: Duration,
    /// The server pings every WebSocket this often.
    pub ping_interval: Duration,
    /// A WebSocket that sends nothing for this long (not even a pong) is closed.
    pub idle_timeout: Duration,
    /// Requests of one WebSocket carried out at once; further frames wait unread.
    pub max_in_flight: usize,
    /// Bytes of replies and events queued for one WebSocket; producers wait beyond it.
    pub max_outbox_bytes: usize,
    /// A message the client does not take within this (it does not read) drops the connection.
    pub send_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 256,
            header_read_timeout: Duration::from_secs(10),
            hello_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(60),
            max_in_flight: 8,
            max_outbox_bytes: 8 << 20,
            send_timeout: Duration::from_secs(30),
        }
    }
}
