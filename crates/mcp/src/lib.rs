//! Nucleic as an MCP server: tools that are requests to the host through `nucleic-client`, as
//! the MCP grant the connection authenticated with (the host enforces its scopes).
//!
//! - `server`: [`NucleicMcp`], its tools, and [`serve_stdio`] (lines bounded).
//! - `args`: the tools' arguments (their input schemas) and bounds.
//! - `wait`: `wait_for_session`, under a deadline.

mod args;
mod server;
mod wait;

pub use server::{MAX_LINE_BYTES, NucleicMcp, serve_stdio};
