//! The host's API: one answer per request, idempotent replies, the intent router, and what
//! an MCP principal may ask (`scopes`).

pub(crate) mod answer;
pub(crate) mod intents;
pub(crate) mod project_scope;
pub(crate) mod reply_turns;
pub(crate) mod scopes;

pub use answer::{Client, McpPrincipal, Principal, error};
