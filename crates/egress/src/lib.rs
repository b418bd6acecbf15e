//! The agents' only way out of their sandbox. A confined agent has a network namespace of its
//! own with only loopback in it; there the [`bridge`](mod@bridge) (run inside, before the agent)
//! listens as the agent's HTTP proxy and as each forwarded model endpoint, and hands every
//! connection over a Unix socket to the host's proxy ([`serve`]), which lets through only what the
//! [`AllowList`] names (or what the rules' asker allows when a name off it is asked about) and
//! reports every decision as an [`EgressEvent`].
//!
//! - [`allow`]: the allow-list (names, `*.domain`, exact IP literals with ports) and the
//!   destination a request names.
//! - [`ask`]: a name off the list asked about (never an IP literal or `localhost`), one question
//!   per destination, at most 16 at a time, held to a deadline; allow and deny remembered.
//! - [`head`]: a proxy request's head, read within 16 KiB / 100 headers and parsed: CONNECT or
//!   plain HTTP in absolute form.
//! - [`origin`]: who in the sandbox opened a proxy connection — the agent program itself (its
//!   background traffic: refused without asking when off the list) or a command it ran (asked).
//! - [`proxy`]: the host side (tokio): tunnels and forwards what the rules allow, refuses the rest
//!   with a 403 saying why, every wait under a deadline, each decision an [`EgressEvent`].
//! - [`resolve`]: names resolved on the host, and the addresses a name must not lead to (a name
//!   that resolves only to loopback or link-local addresses is refused).
//! - [`bridge`](mod@bridge): the sandbox side (blocking, threads): the agent's proxy port and
//!   forwarded model endpoints on the sandbox's loopback, each connection handed over the host's
//!   Unix socket.
//! - [`handoff`]: the connection itself passed over the Unix socket (`SCM_RIGHTS`).
//! - [`splice`]: a relayed connection's bytes moved inside the kernel.

pub mod allow;
pub mod ask;
pub mod bridge;
mod error;
pub mod handoff;
pub mod head;
pub mod origin;
pub mod proxy;
pub mod resolve;
pub mod splice;

pub use allow::{AllowList, Destination};
pub use ask::{Answer, AnswerFuture, MAX_OPEN, Question, askable};
pub use bridge::{bind_loopback, bridge};
pub use error::EgressError;
pub use origin::{AgentProcess, Origin};
pub use proxy::{EgressEvent, EgressRules, ProxyConfig, serve, serve_with};
pub use resolve::Resolver;
