//! Nucleic as an MCP server: tools that read the host through `nucleic-client`.

mod server;

pub use server::{NucleicMcp, serve_stdio};
