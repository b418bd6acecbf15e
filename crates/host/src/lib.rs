//! The host: owns projects and sessions. A session lives in its own git worktree and branch,
//! runs its own agent process under its own single writer (`nucleic_core`), and is indexed in
//! the catalog (SQLite) by a follower task that folds its transcript's events. Every client
//! request (the sync protocol's `ClientMessage`s) ends up as a call on [`Host`].

mod backends;
mod checks;
mod config;
pub mod confinement;
mod control;
mod credentials;
mod disk;
mod egress;
mod error;
mod files;
mod finish;
mod follower;
mod gh;
mod host;
mod keepers;
mod launch;
mod names;
pub mod policy;
mod pool;
mod pool_take;
mod pool_watch;
mod portable;
mod private;
mod pull_request;
mod push;
mod recovery;
mod reply_turns;
mod report;
mod retained;
mod review;
mod rule_intents;
pub mod rules;
mod sandbox_settings;
mod session_policy;
mod shutdown;
mod start_refusals;
mod start_trace;
mod turns;
mod writing;

pub use config::{AgentIsolation, AgentPaths, HostConfig, KeeperSettings, Limits};
pub use credentials::{ChannelDevice, Revocation, TOKEN_FILE, load_or_create_token};
pub use disk::ReclaimReason;
pub use egress::RunEgress;
pub use error::HostError;
pub use files::Listing;
pub use host::Host;
pub use launch::{bubblewrap, run_isolation};
pub use names::title_from_prompt;
pub use nucleic_catalog::DeviceRow;
pub use nucleic_egress::EgressEvent;
pub use nucleic_git::{ExecConfinement, exec_confinement as git_exec_confinement};
pub use nucleic_push::{Delivery as PushDelivery, RetryPolicy as PushRetryPolicy};
pub use private::write_private_file;
pub use push::PushReport;
pub use recovery::RecoveryReport;
pub use reply_turns::ReplyTurn;
pub use retained::Retained;
pub use review::NewComment;
pub use shutdown::{LateSession, STOPPING_BY, ShutdownReport};
pub use start_trace::TRACE_START_VARIABLE;
pub use writing::IDLE_RELEASE_AFTER;
