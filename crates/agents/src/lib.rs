//! Agent backends: spawn an agent CLI, decode its native output into Nucleic events, and carry
//! decisions and follow-ups back to it.
//!
//! - [`agent`]: the backend-neutral [`AgentControl`] trait, [`AgentOutput`] and [`Capabilities`].
//! - [`claude`]: Claude Code (and the simulated agent, which speaks the same protocol).
//! - [`codex`]: Codex (`app-server` adapter; decoders for `exec --json` and `app-server`).
//! - [`AgentLaunch`] / [`AnyAgent`]: one launch description and one handle for every backend.
//! - [`supervisor`]: the one supervisor of every agent process (readers, line cap, batching,
//!   control, watchdog, exit and drain); a backend adds only a decoder and its protocol logic.
//! - [`process`]: process groups, bubblewrap, the process tree and its termination.
//! - [`isolation`]: the agent's confinement as a bubblewrap command line (what it sees, what it
//!   may write, its network namespace, no privilege) and the variables it never inherits.
//! - [`confine`]: the first process in the sandbox (`nucleic __confine`): the network bridge
//!   to the host's egress proxy, then the agent.

pub mod agent;
mod any;
pub mod claude;
pub mod codex;
pub mod confine;
mod error;
pub mod isolation;
pub mod keeper;
pub mod process;
pub mod supervisor;

pub use agent::{AgentControl, AgentOutput, Capabilities, NativeEvent};
pub use any::{AgentLaunch, AnyAgent, backend_capabilities};
pub use error::AgentError;
