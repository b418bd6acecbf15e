//! The server over real sockets: auth, Host/Origin checks, the handshake, malformed / unknown /
//! oversized messages, idempotent message ids, cursor errors, worktree files.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod chat_people;
mod devices;
mod doc_examples;
mod files;
mod limits;
mod on_behalf;
mod protocol;
mod push;
mod support;
mod web;
