//! The session core: one [`SessionController`] task per session is the single writer of its event
//! stream. It assigns `seq`, appends to the transcript before anyone is told, tracks status and
//! pending approvals, and fans events out to [`Subscription`]s that can start from any `seq`.
//! Every transcript write, live or not, goes through a [`Sequencer`], of which at most one exists
//! per transcript.

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
