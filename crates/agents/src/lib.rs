//! Agent backends: spawn an agent CLI, decode its native output into Nucleic events, and carry
//! decisions and follow-ups back to it.
//!
//! - [`agent`]: the backend-neutral [`AgentControl`] trait, [`AgentOutput`] and [`Capabilities`]
//!   (re-exported from the protocol).
//! - [`claude`]: Claude Code (and the simulated agent, which speaks the same protocol): argv
//!   (`launch`), typed native lines (`wire`, `flat`), the decoder (`decode`), validated stdin lines
//!   (`input`), its protocol logic and handle (`session`), exit classification (`exit`).
//! - [`codex`]: Codex: decoders for `exec --json` ([`codex::exec`]) and `app-server`
//!   ([`codex::appserver`]); the app-server adapter (`session` + `session_protocol`, with its stall
//!   test for the watchdog); the `exec` adapter (`exec_session`); permission-mode mapping
//!   (`launch`); exit classification (`exit`).
//! - [`acp`]: agents that speak the Agent Client Protocol (Gemini CLI): one decoder and adapter,
//!   a profile per agent, the agent's file calls answered inside the worktree only.
//! - [`backend`]: what one backend is, one row each ([`BackendDescription`]): launch from the
//!   shared [`CommonOptions`], modes, capabilities, models, handoff, confinement needs.
//! - [`AgentLaunch`] / [`AnyAgent`]: one launch and one handle for every backend.
//! - [`supervisor`]: the one supervisor of every agent process: [`supervisor::launch`], the stdout
//!   and stderr readers as tasks on one output thread (`output`), line framing with the cap,
//!   batching, control replies, the watchdog, exit with drain; every write to an agent's input
//!   under a deadline. A backend adds only a [`supervisor::LineDecoder`] and a
//!   [`supervisor::Protocol`] (`docs/architecture.md`, "Adding a backend").
//! - [`process`]: its own process group, bubblewrap, stopping the whole process *tree*.
//! - [`isolation`]: the agent's confinement as one bubblewrap command line: the machine read-only,
//!   ordered [`isolation::Mount`]s, its own user/pid/network namespaces with every capability
//!   dropped; the host's `NUCLEIC_*` variables and the person's socket variables never inherited.
//! - [`keeper`]: a small process per agent (`nucleic __keeper`) that owns its stdio and spools its
//!   output, so the agent outlives the host.
//! - [`confine`]: the first process in every sandbox (`nucleic __confine`): the network bridge to
//!   the host's egress proxy and private copies of files, then the agent.
//! - [`entry_points`]: `__confine`, `__keeper` and `__sim-agent`, the hidden entry points,
//!   dispatched first by every binary that hosts agents.

pub mod acp;
pub mod agent;
mod any;
pub mod backend;
pub mod claude;
pub mod codex;
pub mod confine;
pub mod entry_points;
mod error;
pub mod isolation;
pub mod keeper;
mod options;
pub mod process;
pub mod supervisor;

pub use agent::{AgentControl, AgentOutput, Capabilities, NativeEvent};
pub use any::{AgentLaunch, AnyAgent};
pub use backend::{
    BACKENDS, BackendDescription, LaunchRequest, SessionFiles, backend_capabilities, backend_named,
    describe,
};
pub use error::AgentError;
pub use options::CommonOptions;
