//! The host's API: one answer per request, idempotent replies, the intent router.

pub(crate) mod answer;
pub(crate) mod intents;
pub(crate) mod reply_turns;

pub use answer::{Client, Principal, error};
