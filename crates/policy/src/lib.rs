//! The policy engine: Claude Code permission rules, modes, hard invariants and risk for every
//! tool call. Pure logic: no processes, no network; rule files are read by [`settings`].
//!
//! ```text
//! let (policy, warnings) = Policy::load(&Sources { … });
//! let decision = policy.evaluate("Bash", &json!({"command": "git status"}), &context);
//! ```

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
