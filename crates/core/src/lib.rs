//! The session core: one [`SessionController`] task per session is the single writer of its event
//! stream. It assigns `seq`, appends to the transcript before anyone is told, tracks status and
//! pending approvals, and fans events out to [`Subscription`]s that can start from any `seq`.

mod approvals;
mod controller;
mod error;
mod handle;
mod status;
mod subscription;

pub use approvals::ApprovalCoordinator;
pub use controller::{SessionConfig, SessionController};
pub use error::CoreError;
pub use handle::{SessionHandle, SessionState};
pub use status::next_status;
pub use subscription::Subscription;
