//! The host: owns projects and sessions. A session lives in its own git worktree and branch,
//! runs its own agent process under its own single writer (`nucleic_core`), and is indexed in
//! the catalog (SQLite) by a follower task that folds its transcript's events. Every client
//! request (the sync protocol's `ClientMessage`s) ends up as one call on [`Host`]
//! ([`Context::answer`]).
//!
//! [`Host`] is a thin wrapper that derefs to the shared [`Context`] (config, catalog, live
//! sessions, change buses, and each part's state); every capability is a part — a folder whose
//! modules add methods to the context and never name `host.rs` (rules in
//! `docs/architecture.md`, kept by `tests/host/parts.rs`):
//!
//! - `api`: the answer to each `ClientMessage` ([`api::Client`], [`api::Principal`]), reply
//!   idempotency per (client, message id) (`reply_turns`, remembered replies), the intent router
//!   (`intents`).
//! - `projects`: registering repositories, settings, branches (`registry`).
//! - `sessions`: starting a session (`start`: worktree, agent, writer, follower), acting on one
//!   (`control`), writers and writes outside one (`writing`, `writers`), catalog folding
//!   (`follower`), worktree files (`files`), what is retained (`retained`), start refusals and
//!   traces, titles and slugs (`names`), sessions made outside Nucleic — listed, adopted,
//!   caught up after a handoff (`outside`).
//! - `worktrees`: warm pools (`pool` state, `tend`, `pool_take`, `pool_watch`), disk use
//!   (`disk`).
//! - `dev_loop`: checks (`checks`, `check_runs`), the turn report (`report`), the diff by turn
//!   (`turns`, `session_locks`), review comments (`review`).
//! - `finishing`: integrate / discard / keep / continue (`finish`), pull requests
//!   (`pull_request`, `gh`).
//! - [`policy`]: each session's policy and mode (`session`, `session_policy`), [`rules`] files
//!   and their intents, project sandboxes (`sandbox_settings`), egress proxies and asks
//!   (`egress`, `egress_ask`, `egress_proxies`), names an allowed fetch grants (`fetch_grants`).
//! - `devices`: the token and devices (`credentials`, `devices_access`), Web Push (`push`).
//! - `lifecycle`: the private data dir, crash recovery (`recovery`, `recovery_report`),
//!   shutdown (`shutdown`, `gate`), export / import / gc (`portable`).
//! - `agents`: an agent's launch (`launch`), its [`confinement`] (the CLIs' project settings
//!   folders kept read-only: `settings_folders`; missing read-only files made first:
//!   `missing_read_only`), keepers (`keepers`,
//!   `keeper_dirs`), what `welcome` offers (`backends`) — the only part naming backend variants.
//! - shared: `context`, `config` ([`HostConfig`]), `error` ([`HostError`]), `clock`.

mod agents;
pub mod api;
mod clock;
mod config;
mod context;
mod dev_loop;
mod devices;
mod error;
mod finishing;
mod host;
mod lifecycle;
pub mod policy;
mod projects;
mod sessions;
mod worktrees;

pub use agents::confinement;
pub use agents::launch::{bubblewrap, planned, run_isolation};
pub use config::{AgentIsolation, AgentPaths, HostConfig, KeeperSettings, Limits};
pub use context::Context;
pub use dev_loop::review::NewComment;
pub use devices::credentials::{ChannelDevice, Revocation, TOKEN_FILE, load_or_create_token};
pub use devices::push::PushReport;
pub use error::HostError;
pub use host::Host;
pub use lifecycle::private::write_private_file;
pub use lifecycle::recovery_report::RecoveryReport;
pub use lifecycle::shutdown::{LateSession, STOPPING_BY, ShutdownReport};
pub use nucleic_catalog::DeviceRow;
pub use nucleic_egress::EgressEvent;
pub use nucleic_git::{ExecConfinement, exec_confinement as git_exec_confinement};
pub use nucleic_push::{Delivery as PushDelivery, RetryPolicy as PushRetryPolicy};
pub use policy::egress::RunEgress;
pub use policy::egress_ask::{EGRESS_ASK_TIMEOUT_VARIABLE, egress_ask_timeout};
pub use policy::rules;
pub use sessions::files::Listing;
pub use sessions::in_place_lock::{
    Holder as InPlaceHolder, lock_path as in_place_lock_path, read_holder as in_place_holder,
};
pub use sessions::names::title_from_prompt;
pub use sessions::outside::AdoptOutside;
pub use sessions::retained::Retained;
pub use sessions::start_trace::TRACE_START_VARIABLE;
pub use sessions::writing::IDLE_RELEASE_AFTER;
pub use worktrees::disk::ReclaimReason;
