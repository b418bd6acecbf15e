//! The client side of Nucleic's sync protocol (`docs/protocol.md`), for every front end in
//! Rust: the CLI, the benches, tests, and front ends to come. A front end depends on this and on
//! `nucleic-protocol`, never on the host. This crate itself depends on `nucleic-protocol`, the
//! channel's pure crypto (`nucleic-channel`) and outbound dialling (`nucleic-http`) only;
//! a test (`crates/cli/tests/cli/crate_graph.rs`) keeps it so, and keeps front ends off the host.
//!
//! - `daemon`: the local daemon of a `$NUCLEIC_HOME` — `daemon.json`, the token, and starting
//!   one (through a [`DaemonStarter`] the binary supplies) only when no host holds the home.
//! - `transport`: the local transport, a WebSocket over loopback TCP or the daemon's Unix
//!   socket, or a device's channel, with a deadline on opening, sending and reading.
//! - `remote`: a device's channel to a host from afar ([`RemoteHost`], [`Opening`]): through
//!   the relay or the LAN listener, the Noise handshake (pair or reconnect), framing, pings;
//!   [`paired`]: the hosts this machine paired with, kept 0600 under the home.
//! - `client`: [`Client`] — hello/welcome with a stable client id, message ids, replies matched
//!   by id, reconnects with backoff that resend the request in flight (the host answers a
//!   repeated id from its remembered reply) and resubscribe from the cursors.
//! - `hello`: the opening, and the host's [`Welcome`].
//! - `cursor`: per-session `seq` cursors: no duplicate, no gap (a gap resubscribes).
//! - `replies`: which reply answers which request, and each request's deadline.
//! - `backoff`: the reconnect pacing and its deadline.
//! - `requests`: typed request helpers; `results`: the payloads of the `IntentResult` an `ack`
//!   carries (typed in `nucleic-protocol`), taken by [`Client::intent_as`].
//! - `window`: a session's past read through a subscription, bounded: a window of events by
//!   seq, the approvals still pending.
//! - `error`: [`ClientError`], each saying what it was doing (and what timed out).

mod backoff;
mod client;
mod cursor;
mod daemon;
mod error;
mod hello;
pub mod paired;
mod remote;
mod replies;
mod requests;
pub mod results;
mod transport;
mod window;

pub use backoff::Backoff;
pub use client::{Client, ClientOptions, Stats, Welcome};
pub use daemon::{DaemonInfo, DaemonStarter, LocalDaemon, read_daemon_file, read_token};
pub use error::{ClientError, Rejection, code_name, describe, rejection};
pub use remote::{Opening, RemoteHost};
pub use replies::reply_id;
pub use requests::Listing;
pub use transport::Endpoint;
pub use window::still_pending;
