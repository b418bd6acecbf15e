//! The policy engine: Claude Code permission rules, modes, hard invariants and risk for every
//! tool call. Pure logic: no processes, no network; rule files are read by [`settings`]. Its
//! syntax, scopes, modes, invariants and classifier are documented in `docs/policy.md`.
//!
//! ```text
//! let (policy, warnings) = Policy::load(&Sources { … });
//! let decision = policy.evaluate("Bash", &json!({"command": "git status"}), &context);
//! ```
//!
//! - [`rule`]: Claude Code permission rules ([`Rule`]).
//! - [`settings`]: rules read from the CLI's settings files and Nucleic's own, by [`Scope`].
//! - [`shell`]: a bounded, fail-closed shell parser.
//! - [`command`]: the programs a line runs, with wrappers and `bash -c` looked through.
//! - [`invariants`]: hard invariants: sudo, force-push, `rm -r` and writes outside the worktree,
//!   `curl | sh`, credentials and the data dir, symlinks resolved through a [`PathResolver`]
//!   ([`paths`]).
//! - [`mode`]: modes ([`Mode`]).
//! - [`risk`]: the risk classifier ([`Risk`]).
//! - [`evaluate`], [`policy`]: the one entry point,
//!   [`Policy::evaluate`]`(tool, input, context) -> Decision`.
//! - [`codex`]: the Codex approval mapping.
//! - [`context`]: what a decision depends on besides the rules ([`Context`]).

mod code;
pub mod codex;
pub mod command;
pub mod context;
mod data;
pub mod evaluate;
mod git;
mod glob;
pub mod invariants;
pub mod mode;
pub mod paths;
mod pinned;
pub mod policy;
pub mod risk;
pub mod rule;
pub mod settings;
pub mod shell;
mod suggest;
mod tools;
mod wrappers;

pub use codex::CodexCommand;
pub use context::Context;
pub use evaluate::Decision;
pub use mode::Mode;
pub use paths::{FsResolver, MapResolver, PathResolver};
pub use policy::Policy;
pub use risk::Risk;
pub use rule::{Behaviour, Rule, RuleError};
pub use settings::{LoadWarning, Scope, ScopedRule, Sources};
