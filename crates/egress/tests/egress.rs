//! The proxy and the bridge against a real upstream on loopback, checked by effect: a refused
//! request never reaches the upstream (its accepted connections are counted), an allowed one
//! gets the upstream's answer, bad input is answered and closed, a name off the list is asked
//! about, and nothing hangs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

#[path = "egress/ask.rs"]
mod ask;
#[path = "egress/bridge.rs"]
mod bridge;
#[path = "egress/proxy.rs"]
mod proxy;
#[path = "egress/support.rs"]
mod support;
