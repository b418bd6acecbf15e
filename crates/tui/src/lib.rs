//! The terminal cockpit, `nucleic tui` (issue 31, `docs/tui.md`): every session of every
//! project, the inbox of approvals answered with single keys, and a session's transcript with
//! a composer — a client of the daemon through `nucleic-client` only.
//!
//! - `app`: the state, fed by protocol messages and keys, pure (unit-tested).
//! - `inbox`: every pending approval by risk then age, answering one, its selection.
//! - `asking`: plans read and approved into a mode, an agent's questions answered.
//! - `transcript`: one session's events folded into rows (streamed text merged, tool calls
//!   with their results, approvals with who answered).
//! - `diff`: a session's diff or one turn's (files, counts, the patch) as rows, each line
//!   knowing its file and new-side number, review comments under theirs.
//! - `diff_view`: the diff screen drawn (cursor, range, colours, comments).
//! - `highlight`: syntax colour for the diff's code (syntect grammars, the terminal's palette).
//! - `reviewing`: the diff screen's keys, review comments typed and sent, the model chosen.
//! - `sanitize`: agent text made safe for a terminal (no escape sequence reaches it).
//! - `layout`: rows wrapped and laid out for one screenful only.
//! - `render`: the screens drawn with ratatui.
//! - `keys`: what each key does, and the list `?` shows.
//! - `run`: the terminal, the key reader, the events and requests tasks, the loop.

pub mod app;
pub mod asking;
pub mod diff;
pub mod diff_view;
pub mod highlight;
pub mod inbox;
pub mod keys;
pub mod layout;
pub mod render;
pub mod reviewing;
mod run;
pub mod sanitize;
pub mod transcript;

pub use run::{TuiError, run};
