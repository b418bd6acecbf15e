//! The agents' only way out of their sandbox. A confined agent has a network namespace of its
//! own with only loopback in it; there the [`bridge`] (run inside, before the agent) listens as
//! the agent's HTTP proxy and as each forwarded model endpoint, and hands every connection over a
//! Unix socket to the host's proxy ([`serve`]), which lets through only what the [`AllowList`]
//! names and reports every decision as an [`EgressEvent`].
//!
//! - [`allow`]: the allow-list and the destination a request names.
//! - [`head`]: reading and parsing a proxy request's head, bounded.
//! - [`proxy`]: the host side (tokio): CONNECT tunnels and plain HTTP, refusals as 403s.
//! - [`resolve`]: names resolved on the host, and the addresses a name must not lead to.
//! - [`bridge`]: the sandbox side (blocking, threads): hands each connection over.
//! - [`handoff`]: the connection itself passed over the Unix socket (`SCM_RIGHTS`).
//! - [`splice`]: a relayed connection's bytes moved inside the kernel.

pub mod allow;
pub mod bridge;
mod error;
pub mod handoff;
pub mod head;
pub mod proxy;
pub mod resolve;
pub mod splice;

pub use allow::{AllowList, Destination};
pub use bridge::{bind_loopback, bridge};
pub use error::EgressError;
pub use proxy::{EgressEvent, EgressRules, ProxyConfig, serve, serve_with};
pub use resolve::Resolver;
