//! The host: owns projects and sessions. A session lives in its own git worktree and branch,
//! runs its own agent process under its own single writer (`nucleic_core`), and is indexed in
//! the catalog (SQLite) by a follower task that folds its transcript's events. Every client
//! request (the sync protocol's `ClientMessage`s) ends up as a call on [`Host`].
//!
//! [`Host`] holds projects; sessions in worktrees (create, setup, launch the agent, writer,
//! catalog follower); guardrails (live sessions, worktrees, free disk); the answer to everything
//! clients ask (input, decisions, intents, git facts, finishing, export/import, gc); native resume
//! of sessions whose agent is gone; crash recovery at open.
//!
//! - `host` (`host.rs`): projects, session creation, guardrails.
//! - `control`: acting on a session.
//! - `finish`: finishing, git facts, intents.
//! - `files`: read-only listings and contents of a worktree, opened beneath its directory
//!   descriptor one name at a time, that never leave it or enter `.git`; imported sessions have
//!   none.
//! - `launch`: an agent's executable, flags and environment, and the confinement setting: one
//!   bubblewrap probe per process, real agents refused where it cannot run.
//! - [`confinement`]: what an agent's sandbox lets through: homes hidden with an allow-list bound
//!   back, system secrets, the worktree and git's session refs writable, the agent CLI's state,
//!   policy files read-only, model endpoints and loopback forwards.
//! - `sandbox_settings`: a project's additions to its agents' confinement, checked before kept.
//! - `egress`: each confined agent's egress proxy, one per session, stopped when the session
//!   retires; refusals recorded as `egressRefused`.
//! - `backends`: what `welcome` offers.
//! - `credentials`: the token file, devices, revocation and token rotation, announced to open
//!   connections.
//! - `portable`: export, import, gc.
//! - `recovery`: crash recovery at open.
//! - `follower`: catalog folding (`fold_into_catalog`).
//! - `writing`: events outside a live writer (sequencer → catalog → clients); one writer start per
//!   session at a time; the idle deadline after which an idle session's writer lets its transcript
//!   go ([`IDLE_RELEASE_AFTER`]).
//! - `retained`: what the host holds per session, counted for leak checks ([`Retained`]).
//! - `checks`: a project's checks run in a session's worktree on request, after turns and as the
//!   merge gate, recorded as `checkStarted` / `checkOutput` / `checkFinished`; the verdict.
//! - `report`: the agent's claims of its last turn next to the host's facts, contradictions
//!   flagged.
//! - `pull_request`, `gh`: finishing by pull request: gate, commit, push, `gh pr create` with a
//!   scrubbed environment and a deadline, `pullRequestOpened`.
//! - `disk`: worktree disk use measured, reclaimed by request, age or budget, restored on a
//!   follow-up.
//! - `turns`: the diff view: whole session or one turn, from worktree snapshots at every turn
//!   boundary.
//! - `review`: review comments on the diff, sent as one follow-up, recorded as `reviewSent`.
//! - `shutdown`: stopping every agent within a deadline; no agent starts once it began.
//! - [`policy`]: each session's policy and mode.
//! - `session_policy`: the rules and mode a session starts with, `set_session_mode`.
//! - [`rules`]: Nucleic's rule files: rules, default mode, approval timeout.
//! - `rule_intents`: rules by scope and the project's mode for clients.
//! - `keepers`: agents under keepers: start, re-adopt after a restart.
//! - `pool` / `pool_take` / `pool_watch`: warm worktree pools: preparing and tending, handing one
//!   to a new session, an inotify watch instead of a `git status`.
//! - `start_refusals`: what refuses a start before its agent runs.
//! - `start_trace`: a start's phases timed ([`TRACE_START_VARIABLE`], `NUCLEIC_TRACE_START`).
//! - `push`: Web Push subscriptions, quiet hours, the notifier.
//! - `reply_turns`: one answer per client and message id.
//! - `names`: session titles and worktree slugs from what a person typed.
//! - `private`: the 0700/0600 data dir.
//! - `config`: [`HostConfig`], what a host needs to know; `error`: [`HostError`].

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
pub use agents::launch::{bubblewrap, run_isolation};
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
pub use sessions::names::title_from_prompt;
pub use sessions::retained::Retained;
pub use sessions::start_trace::TRACE_START_VARIABLE;
pub use sessions::writing::IDLE_RELEASE_AFTER;
pub use worktrees::disk::ReclaimReason;
