//! Policy: each session's rules and mode, rule files, project sandboxes, egress.

pub(crate) mod egress;
pub(crate) mod egress_ask;
pub(crate) mod egress_proxies;
pub(crate) mod fetch_grants;
pub(crate) mod rule_intents;
pub mod rules;
pub(crate) mod sandbox_settings;
pub mod session;
pub(crate) mod session_policy;

pub use session::*;
