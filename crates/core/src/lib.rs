//! The session core: one [`SessionController`] task per session is the single writer of its event
//! stream. It assigns `seq`, appends to the transcript before anyone is told, tracks status and
//! pending approvals, and fans events out to [`Subscription`]s that can start from any `seq`.
//! Every transcript write, live or not, goes through a [`Sequencer`], of which at most one exists
//! per transcript.
//!
//! - `controller` (`controller.rs`): [`SessionController`], the single writer task per session:
//!   assigns `seq`, appends to the transcript, tracks status, then broadcasts; optionally stays
//!   open after its agent exits to record host events. Its approval decisions are in
//!   `controller/decisions.rs`; while its session is idle (agent alive, waiting for input, nothing
//!   pending) it lets its transcript, lock and live bus go after the host's idle deadline and
//!   reopens them at the next event (`controller/idle.rs`). The host's own questions (`SessionHandle::ask_host`, the egress
//!   proxy's asked domains) are recorded and answered like approvals without the agent being
//!   told (`controller/host_asks.rs`).
//! - `approvals`: [`ApprovalCoordinator`]: first responder wins, stale decisions refused, voiding
//!   at turn end or agent death, timeouts.
//! - `subscription`: [`Subscription`]: catch-up from disk, then live, no gap, no duplicate.
//! - `handle`: [`SessionHandle`], how everyone else talks to a session.
//! - `sequencer`: [`Sequencer`], the only numbering and appending of events, one per transcript
//!   (`writer_lock`: a registry plus a `flock`).
//! - `batch` (`batch.rs`): [`EventBatch`] / [`EventSlice`] / [`SharedEvent`]: a written batch with
//!   its transcript JSON, shared by every reader.
//! - `gate`: [`ApprovalPolicy`], the host's say on every approval before a person sees it.
//! - `status`: [`next_status`], which event moves a session to which status.
//! - `error`: [`CoreError`].

mod approvals;
mod batch;
mod controller;
mod error;
mod gate;
mod handle;
mod sequencer;
mod status;
mod subscription;
mod writer_lock;

pub use approvals::{ApprovalCoordinator, native_request_id, reasked_id};
pub use batch::{EventBatch, EventSlice, SharedEvent};
pub use controller::{KeptRun, Resumed, SessionConfig, SessionController};
pub use error::CoreError;
pub use gate::{ApprovalPolicy, Judgement, Verdict};
pub use handle::{SessionHandle, SessionState};
pub use sequencer::{Appended, Draft, Released, Sequencer};
pub use status::next_status;
pub use subscription::Subscription;
pub use writer_lock::{open_writers, try_lock_file};
