//! The Claude Code backend: stream-json over stdio, with the stdio control protocol for approvals
//! (`--permission-prompt-tool stdio`; see `docs/architecture.md` for why not the MCP route).

mod backend;
mod decode;
mod exit;
mod flat;
mod input;
mod launch;
mod sandbox;
mod session;
mod wire;

pub use backend::{CLAUDE_CODE, CLAUDE_WRITABLE, SIMULATED, TESTED_CLAUDE};
pub use decode::{ClaudeDecoder, ControlIn, DecodedLine, TurnSummary};
pub use exit::{ExitFacts, ProcessEnd, classify};
pub use input::{PERMISSION_MODES, validate_line};
pub use launch::ClaudeOptions;
pub use sandbox::{
    CREDENTIAL_VARIABLES, CommandSandbox, describe_missing,
    missing_tools as command_sandbox_missing_tools,
};
pub(crate) use session::run_claude;
pub use session::{CLAUDE_CAPABILITIES, ClaudeHandle, spawn_claude};
