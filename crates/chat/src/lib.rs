//! The chat bridge (issue 27): a person runs and steers agents from a chat app with
//! PingPongCode's `/cc` language. This crate holds the bridge: the language, the store, the transports, pairing, and the bridge to the host, reached only through `nucleic-client`.
//!
//! - [`command`]: one chat message → one [`Command`] (or an error saying what was expected).
//! - [`codes`]: short, unambiguous codes for what waits on a person in one chat.
//! - [`files`]: the attachment limit, the 0600 spool of outgoing files, safe names, multipart.
//! - [`split`]: long text into messages a service takes, never cutting a code fence.
//! - [`telegram`]: the Telegram Bot API (long polling, sends with buttons and topics, faults
//!   classified for the outbox) and sending the outbox's due messages.
//! - [`matrix`]: the Matrix client-server API (`/sync` from a persisted `since`, idempotent
//!   sends by `txnId`, joins on invite, threads).
//! - [`transport`]: the one trait the services sit behind, and what they exchange.
//! - [`outbox`]: the bridge's durable store: every message written before it is sent, sent in
//!   order per chat with retries and backoff; inbound updates recorded before they are acted
//!   on; the services' sync cursors.
//! - [`pairing`]: one-time codes that bind a chat user; everyone else ignored and counted.
//! - `outside`: the person's own sessions made outside Nucleic, listed and carried on.
//! - [`state`]: per chat its project and session, the codes of what waits, followed sessions.
//! - [`lock`]: one poller per bot token, ever.
//! - `acting`: each paired user's commands on a connection acting for them, so the host
//!   records them as `telegram:<user>` / `matrix:@user:server`.
//! - [`bridge`]: the bridge itself over `nucleic-client` (poller, dedupe, sender, events);
//!   `exec` runs each command as host requests (`tasks` starts them), `report` turns events into reports.

mod acting;
pub mod bridge;
pub mod codes;
pub mod command;
mod exec;
pub mod files;
pub mod lock;
pub mod matrix;
pub mod outbox;
mod outside;
pub mod pairing;
mod report;
mod reporting;
pub mod split;
pub mod state;
mod tasks;
pub mod telegram;
mod transfer;
pub mod transport;

pub use codes::CodeBook;
pub use command::{Answer, Command, CommandError, Mode, parse};
/// The HTTP client the transports are built with (so a front end needs no HTTP crate of its own).
pub use nucleic_http::Client as HttpClient;
pub use outbox::{Attempt, Outbox, OutboxError, Queued};
